"""``table-controller users``: the web pit display's read-only logins.

``users add NAME [--file F] [--password-stdin]`` asks for the password twice
(or reads one line from stdin) and writes the salted hash; ``users remove
NAME`` and ``users list`` do what they say.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from table_controller.recorder.web.errors import UsersFileError
from table_controller.recorder.web.users import add_user, load_users, remove_user

DEFAULT_FILE = "pit-users"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=["add", "remove", "list"], help="add or change, remove, list"
    )
    parser.add_argument("name", nargs="?", help="the user's name (add, remove)")
    parser.add_argument(
        "--file", default=DEFAULT_FILE, help=f"the users file (default: ./{DEFAULT_FILE})"
    )
    parser.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of stdin instead of asking",
    )


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"password for {args.name}: ")
    if getpass.getpass("again: ") != first:
        raise UsersFileError("the two passwords differ: nothing written")
    return first


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "list":
            for name in sorted(load_users(args.file).hashes):
                print(name)
            return 0
        if not args.name:
            print(f"users {args.action}: give the user's NAME", file=sys.stderr)
            return 2
        if args.action == "remove":
            remove_user(args.file, args.name)
            print(f"{args.file}: removed {args.name}")
            return 0
        new = add_user(args.file, args.name, _password(args))
    except UsersFileError as exc:
        print(f"users: {exc}", file=sys.stderr)
        return 1
    except (EOFError, KeyboardInterrupt):
        print("users: nothing written", file=sys.stderr)
        return 130
    print(f"{args.file}: {'added' if new else 'changed the password of'} {args.name}")
    return 0
