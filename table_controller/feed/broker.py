"""Where the broker is and how to reach it safely: the URL, the TLS context, the password.

One implementation for every client of the feed: the table's publisher and its config,
the pit display, the recorder and the test rigs. Nothing here opens a connection; a TLS
context is only built (docs/feed.md, "Who may do what on the broker"; docs/devices.md
``[mqtt]``), and a connection's task is made to end at a stop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import pwd
import ssl
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

DEFAULT_PORT: Final = 1883
DEFAULT_TLS_PORT: Final = 8883
# A connection's task is cancelled again this often until it has ended (cancel_until_ended).
CANCEL_AGAIN_S: Final = 1.0
# Secret files: owner read/write at most; any group or other bit is refused.
_PRIVATE_BITS: Final = 0o077


class BrokerConfigError(ValueError):
    """The broker settings cannot be used; the message names the key or file and the fix."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool

    @property
    def loopback(self) -> bool:
        """True when the broker is on this machine: nothing crosses a network."""
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_broker_url(url: str, key: str = "mqtt.url") -> BrokerAddress:
    """``mqtt://host[:port]`` or ``mqtts://host[:port]`` (TLS); ``key`` names the setting."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BrokerConfigError(f"{key}: {url!r}: {exc}") from exc
    if parts.scheme not in ("mqtt", "mqtts"):
        raise BrokerConfigError(f"{key}: {url!r}: use mqtt:// or mqtts:// (mqtt://HOST[:PORT])")
    if parts.username is not None or parts.password is not None:
        raise BrokerConfigError(
            f"{key}: no credentials in the URL; use mqtt.username and mqtt.password_file"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BrokerConfigError(f"{key}: {url!r}: only a host and a port")
    try:
        port = parts.port
    except ValueError as exc:
        raise BrokerConfigError(f"{key}: {url!r}: bad port (1..65535)") from exc
    if not parts.hostname:
        raise BrokerConfigError(f"{key}: {url!r}: no host")
    # Port 0 is no port: it must not quietly become the default (issue: mqtts://host:0).
    if port == 0:
        raise BrokerConfigError(f"{key}: {url!r}: bad port 0 (1..65535)")
    tls = parts.scheme == "mqtts"
    if port is None:
        port = DEFAULT_TLS_PORT if tls else DEFAULT_PORT
    return BrokerAddress(host=parts.hostname, port=port, tls=tls)


_PLAINTEXT_FIX: Final = (
    "use mqtts:// (with mqtt.ca_file), or set mqtt.allow_plaintext_password = true "
    "on a network you trust"
)


def check_password_transport(
    address: BrokerAddress,
    *,
    allow_plaintext: bool,
    key: str = "mqtt.url",
    fix: str = _PLAINTEXT_FIX,
) -> None:
    """Refuse a password sent in clear over a network; warn whenever it goes in clear.

    Over ``mqtt://`` the password crosses the wire as it is: only a loopback broker, or
    an operator's explicit ``allow_plaintext_password = true``, may have it. ``key`` and
    ``fix`` name the setting and what to do, in the words of the config or command.
    """
    if address.tls:
        return
    if not address.loopback and not allow_plaintext:
        raise BrokerConfigError(
            f"{key}: a password would go in clear to {address.host} over mqtt://; {fix}"
        )
    log.warning(
        "the broker password goes in clear to %s:%d (mqtt://, not mqtts://)",
        address.host,
        address.port,
    )


def password_transport_check(url: str, password_file: object, allow_plaintext: bool) -> None:
    """The configs' check (table, recorder): with a password, ``check_password_transport``
    of ``url``, as a ValueError for the config's validator."""
    if password_file is None:
        return
    try:
        check_password_transport(parse_broker_url(url), allow_plaintext=allow_plaintext)
    except BrokerConfigError as exc:
        raise ValueError(str(exc)) from None


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _who_may(mode: int) -> str:
    """``readable by others, writable by its group``: what a secret's mode lets others do."""
    found = []
    for who, read, write, run in (
        ("others", stat.S_IROTH, stat.S_IWOTH, stat.S_IXOTH),
        ("its group", stat.S_IRGRP, stat.S_IWGRP, stat.S_IXGRP),
    ):
        found += [
            f"{how} by {who}"
            for how, bit in (("readable", read), ("writable", write), ("executable", run))
            if mode & bit
        ]
    return ", ".join(found)


def _check_private(path: Path, key: str, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise BrokerConfigError(f"{key}: {path} is not a regular file")
    mode = stat.S_IMODE(info.st_mode)
    if mode & _PRIVATE_BITS:
        raise BrokerConfigError(
            f"{key}: {path} is {_who_may(mode)} (mode {mode:04o}); "
            f"make it private: chmod 600 {path}"
        )
    me = os.geteuid()
    if info.st_uid != me:
        raise BrokerConfigError(
            f"{key}: {path} belongs to {_user(info.st_uid)}, not to {_user(me)} that "
            f"reads it; give it to the user the program runs as: chown {_user(me)} {path}"
        )


def read_password(path: Path, key: str = "mqtt.password_file") -> str:
    """The broker password from ``path``: a private regular file owned by this user.

    Refused, naming the file and the fix: a symbolic link (it could be pointed at
    another file), any group or other permission, an owner other than the user this
    process runs as. ``key`` names the setting in error messages (a config key or a
    CLI option).
    """
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise BrokerConfigError(
                f"{key}: {path} is a symbolic link; name the file itself "
                f"({os.path.realpath(path)}), so that the link cannot be pointed elsewhere"
            )
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise BrokerConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
    try:
        _check_private(path, key, os.fstat(fd))
        with os.fdopen(os.dup(fd), "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BrokerConfigError(f"{key}: cannot read {path}: {exc}") from exc
    finally:
        os.close(fd)
    password = text.rstrip("\r\n")
    if not password:
        raise BrokerConfigError(f"{key}: {path} is empty")
    return password


class _ClosingSSLSocket(ssl.SSLSocket):
    """An SSL socket that closes itself when its handshake fails.

    paho-mqtt 2.2 leaves the socket of a failed handshake (an untrusted
    broker) open until it is garbage-collected; this is the documented way
    (``SSLContext.sslsocket_class``) to close it at once.
    """

    def do_handshake(self, block: bool = False) -> None:
        try:
            super().do_handshake(block)
        except BaseException:
            self.close()
            raise


def tls_context(ca_file: Path | None, key: str = "mqtt.ca_file") -> ssl.SSLContext:
    """A client context that verifies the broker's certificate and host name.

    paho-mqtt 2.2 leaves the socket of a failed handshake open; the context's
    socket class closes it at once. ``key`` names the setting in error messages.
    """
    try:
        context = ssl.create_default_context(
            ssl.Purpose.SERVER_AUTH, cafile=None if ca_file is None else str(ca_file)
        )
    except FileNotFoundError as exc:
        raise BrokerConfigError(f"{key}: {ca_file}: no such file") from exc
    except (OSError, ssl.SSLError) as exc:
        raise BrokerConfigError(f"{key}: {ca_file}: not usable: {exc}") from exc
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    context.sslsocket_class = _ClosingSSLSocket
    return context


async def cancel_until_ended(task: asyncio.Task[Any], again_s: float = CANCEL_AGAIN_S) -> None:
    """Cancel ``task``, again every ``again_s`` until it has ended, and wait for it.

    A cancel can be lost: Python 3.11's ``wait_for`` returns the result instead when both
    land at once, and aiomqtt awaits the CONNACK so. A broker connection cancelled as it
    connects would then run on, connected, for good, and whoever waits for it with it.
    What the task raised, its cancel included, is not raised here.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=again_s)
