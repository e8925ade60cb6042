"""The host, port and options of a network serial URL, read at start as pyserial reads them.

``serial_for_url(url, do_not_open=True)`` checks only a URL's scheme: pyserial reads the
rest of a ``socket://`` or ``rfc2217://`` URL when it opens the port, and a driver retries
a failed open for ever (docs/devices.md). So the config reads them here, by the rules of
pyserial's own URL handlers (``serial.urlhandler.protocol_socket``, ``serial.rfc2217``):
a URL that can never be opened is refused, saying what is wrong. Nothing is opened and no
name is resolved; any other URL (a device path, ``loop://``) is left to pyserial.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Final
from urllib.parse import parse_qs, urlsplit

LOG_LEVELS: Final = ("debug", "info", "warning", "error")

# What is wrong with an option's value, or None when it is fine.
OptionCheck = Callable[[str], str | None]


def _log_level(value: str) -> str | None:
    if value in LOG_LEVELS:
        return None
    return f"logging={value!r} is not one of {', '.join(LOG_LEVELS)}"


def _flag(value: str) -> str | None:
    return None  # pyserial sets the option whatever its value


def _timeout(value: str) -> str | None:
    try:
        seconds = float(value)
    except ValueError:
        return f"timeout={value!r} is not a number of seconds"
    if not seconds > 0:
        # pyserial waits that long for the RFC 2217 negotiation: no time is never enough.
        return f"timeout={value!r} must be a number of seconds above 0"
    return None


_SOCKET_OPTIONS: Final = MappingProxyType({"logging": _log_level})
_RFC2217_OPTIONS: Final = MappingProxyType(
    {"logging": _log_level, "ign_set_control": _flag, "poll_modem": _flag, "timeout": _timeout}
)
# Each network scheme: its form, as pyserial's messages write it, and its query options.
SCHEMES: Final = MappingProxyType(
    {
        "socket": ("socket://HOST:PORT[?logging=LEVEL]", _SOCKET_OPTIONS),
        "rfc2217": ("rfc2217://HOST:PORT[?OPTION[&OPTION...]]", _RFC2217_OPTIONS),
    }
)


def check_serial_url(url: str) -> None:
    """A ValueError saying what is wrong with a ``socket://`` or ``rfc2217://`` URL that can
    never be opened: no host, no port or one outside 1..65535, an option pyserial does not
    take or a value it cannot use."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in SCHEMES:
        return
    form, options = SCHEMES[scheme]
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ValueError(f"{url!r}: {exc} ({form})") from None
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{url!r}: bad port (1..65535)") from None
    if not parts.hostname:
        raise ValueError(f"{url!r}: no host ({form})")
    if port is None:
        raise ValueError(f"{url!r}: no port ({form})")
    if port == 0:
        # pyserial takes port 0, and no connection to it ever opens.
        raise ValueError(f"{url!r}: bad port 0 (1..65535)")
    for name, values in parse_qs(parts.query, keep_blank_values=True).items():
        check = options.get(name)
        if check is None:
            raise ValueError(
                f"{url!r}: unknown option {name!r}; {scheme}:// takes {', '.join(options)}"
            )
        # pyserial reads the first value of an option given more than once.
        if (fault := check(values[0])) is not None:
            raise ValueError(f"{url!r}: {fault}")
