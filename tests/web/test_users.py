"""The users file and ``table-controller users``: salted hashes, 0600, refusals named."""

from __future__ import annotations

import functools
import io
import stat
import sys
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller import cli
from table_controller.recorder.web.errors import UsersFileError
from table_controller.recorder.web.users import Users, add_user, load_users, session_secret


def test_add_writes_a_private_file_with_a_salted_argon2id_hash(tmp_path: Path) -> None:
    path = tmp_path / "users"
    assert add_user(path, "alice", "correct horse") is True
    assert add_user(path, "bob", "correct horse") is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    users = load_users(path)
    assert users.hashes["alice"].startswith("$argon2id$")
    assert users.hashes["alice"] != users.hashes["bob"]  # salted: same password, other hash
    assert "correct horse" not in path.read_text()
    assert users.verify("alice", "correct horse")
    assert not users.verify("alice", "wrong horse")
    assert not users.verify("carol", "correct horse")
    assert add_user(path, "alice", "new password") is False
    assert load_users(path).verify("alice", "new password")


def test_bad_names_short_passwords_and_broken_files_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "users"
    with pytest.raises(UsersFileError, match="user name"):
        add_user(path, "a:b", "long enough")
    with pytest.raises(UsersFileError, match="user name"):
        add_user(path, "pit-2\n", "long enough")  # a file no start could read after
    with pytest.raises(UsersFileError, match="at least 8"):
        add_user(path, "alice", "short")
    with pytest.raises(UsersFileError, match="users add NAME --file"):
        load_users(path)
    path.write_text("alice:plaintext\n")
    with pytest.raises(UsersFileError, match=r"users:1: not 'name:\$argon2id"):
        load_users(path)


@functools.cache
def _alice() -> Users:
    # Low costs for the property test alone: verify reads the costs from the hash.
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    return Users(Path("users"), {"alice": cheap.hash("s3cret-pass")})


@settings(max_examples=60)
@given(st.text(max_size=40))
def test_verify_refuses_every_other_password(guess: str) -> None:
    assert _alice().verify("alice", guess) == (guess == "s3cret-pass")


def test_the_session_secret_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = session_secret(tmp_path / "users")
    assert len(first) == 64
    assert session_secret(tmp_path / "users") == first
    assert stat.S_IMODE((tmp_path / "users.secret").stat().st_mode) == 0o600


def test_the_command_adds_from_stdin_lists_and_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pit-users"
    monkeypatch.setattr(sys, "stdin", io.StringIO("pit-password\n"))
    assert cli.main(["users", "add", "pit-boss", "--file", str(path), "--password-stdin"]) == 0
    assert load_users(path).verify("pit-boss", "pit-password")
    assert cli.main(["users", "list", "--file", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "pit-boss"
    assert cli.main(["users", "remove", "nobody", "--file", str(path)]) == 1
    assert "no user 'nobody'" in capsys.readouterr().err
    assert cli.main(["users", "remove", "pit-boss", "--file", str(path)]) == 0
    assert load_users(path).hashes == {}
