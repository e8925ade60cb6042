"""The pit's read-only users: a file of names and salted Argon2id hashes.

One user a line, ``name:hash``, where the hash is argon2-cffi's PHC string
(``$argon2id$v=19$m=…,t=…,p=…$salt$digest``: the salt and the cost travel with
it, so a file written with older costs still verifies). ``#`` starts a comment.
The file is written with mode 0600, atomically (a temporary file renamed over
it), so a reader never sees half a file.

The session cookie's signing secret lives beside it (``<file>.secret``, 0600),
generated on first use: a new secret signs everybody out, nothing else.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from table_controller.recorder.web.errors import UsersFileError

log = logging.getLogger(__name__)
NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")  # fullmatch: no "\n" after
MIN_PASSWORD: Final = 8
SECRET_SUFFIX: Final = ".secret"
_HASHER: Final = PasswordHasher()
# Verified when the name is unknown, so that a wrong name costs as long as a
# wrong password and the time taken does not tell which names exist.
_DUMMY: Final = _HASHER.hash(secrets.token_hex(16))


@dataclass(frozen=True, slots=True)
class Users:
    """The users of one file, by name."""

    path: Path
    hashes: dict[str, str]

    def verify(self, name: str, password: str) -> bool:
        """True only for a known name with its password."""
        stored = self.hashes.get(name)
        try:
            return _HASHER.verify(stored or _DUMMY, password) and stored is not None
        except (VerificationError, InvalidHashError):
            return False


class UsersFile:
    """The users file as it is now: read again when it changes on disk, so that a user
    removed (or a password changed) counts from the next request, without a restart.

    A file that became unreadable or malformed keeps the last good one in force
    (logged once per change): the display stays usable while it is fixed.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._users = load_users(self.path)  # a bad file at start stops the start
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def current(self) -> Users:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._users = load_users(self.path)
            except UsersFileError as exc:
                log.warning("%s; the users read before stay in force", exc)
        return self._users

    def knows(self, name: object) -> bool:
        return isinstance(name, str) and name in self.current().hashes

    def seal(self, name: str) -> str | None:
        """What a session opened as ``name`` must still show: a digest of the user's stored
        hash (its own salt), so a password changed ends the sessions opened with the old
        one at their next request. None for a name the file does not hold."""
        stored = self.current().hashes.get(name)
        return None if stored is None else hashlib.sha256(stored.encode()).hexdigest()[:32]

    def verify(self, name: str, password: str) -> bool:
        return self.current().verify(name, password)


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UsersFileError(
            f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return name


def load_users(path: str | Path) -> Users:
    """Read a users file; a missing file is an error naming what to run."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsersFileError(
            f"{p}: no users file: create one with `table-controller users add NAME --file {p}`"
        ) from exc
    except OSError as exc:
        raise UsersFileError(f"{p}: cannot read: {exc.strerror}") from exc
    return Users(p, _parse(p, text))


def _parse(path: Path, text: str) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, hashed = line.partition(":")
        if not sep or not NAME.fullmatch(name) or not hashed.startswith("$argon2"):
            raise UsersFileError(
                f"{path}:{number}: not 'name:$argon2id$…': "
                "rewrite it with `table-controller users add`"
            )
        if name in hashes:
            raise UsersFileError(f"{path}:{number}: user {name!r} appears twice")
        hashes[name] = hashed
    return hashes


def add_user(path: str | Path, name: str, password: str) -> bool:
    """Add ``name`` or replace its password; True when the name is new."""
    check_name(name)
    if len(password) < MIN_PASSWORD:
        raise UsersFileError(f"password of {name!r}: use at least {MIN_PASSWORD} characters")
    p = Path(path)
    hashes = load_users(p).hashes if p.exists() else {}
    new = name not in hashes
    hashes[name] = _HASHER.hash(password)
    _write(p, hashes)
    return new


def remove_user(path: str | Path, name: str) -> None:
    p = Path(path)
    hashes = load_users(p).hashes
    if hashes.pop(name, None) is None:
        raise UsersFileError(f"{p}: no user {name!r}")
    _write(p, hashes)


def _write(path: Path, hashes: dict[str, str]) -> None:
    body = "# pit users: name:argon2id hash (table-controller users add NAME)\n"
    body += "".join(f"{name}:{hashed}\n" for name, hashed in sorted(hashes.items()))
    _write_private(path, body)


def _write_private(path: Path, body: str) -> None:
    """Write ``body`` readable by its owner only, replacing ``path`` in one rename."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsersFileError(f"{path}: cannot write: {exc.strerror}") from exc


def session_secret(users_path: str | Path) -> str:
    """The cookie-signing secret beside the users file, made on first use."""
    p = Path(f"{users_path}{SECRET_SUFFIX}")
    try:
        secret = p.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        secret = ""
    except OSError as exc:
        raise UsersFileError(f"{p}: cannot read: {exc.strerror}") from exc
    if len(secret) < 32:
        secret = secrets.token_hex(32)
        _write_private(p, secret + "\n")
    return secret
