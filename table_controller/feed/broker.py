"""Where the broker is and how to reach it: URL, password file and TLS (``MQTT.md``).

Shared by every client of the broker (the table's publisher, the pit display, the
recorder), so that a broker setting is read and refused in one way everywhere.
"""

from __future__ import annotations

import os
import ssl
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

DEFAULT_PORT: Final = 1883
DEFAULT_TLS_PORT: Final = 8883


class BrokerConfigError(ValueError):
    """The [mqtt] settings cannot be used; the message names the key or file."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool


def parse_broker_url(url: str) -> BrokerAddress:
    """``mqtt://host[:port]`` or ``mqtts://host[:port]`` (TLS)."""
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts"):
        raise BrokerConfigError(f"mqtt.url: {url!r}: use mqtt:// or mqtts://")
    if parts.username is not None or parts.password is not None:
        raise BrokerConfigError(
            "mqtt.url: no credentials in the URL; use mqtt.username and mqtt.password_file"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BrokerConfigError(f"mqtt.url: {url!r}: only a host and a port")
    try:
        port = parts.port
    except ValueError as exc:
        raise BrokerConfigError(f"mqtt.url: {url!r}: bad port") from exc
    if not parts.hostname:
        raise BrokerConfigError(f"mqtt.url: {url!r}: no host")
    tls = parts.scheme == "mqtts"
    default = DEFAULT_TLS_PORT if tls else DEFAULT_PORT
    return BrokerAddress(host=parts.hostname, port=port or default, tls=tls)


def read_password(path: Path, key: str = "mqtt.password_file") -> str:
    """The broker password from ``path``, refused if others may read the file.

    ``key`` names the setting in error messages (a config key or a CLI option).
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise BrokerConfigError(f"{key}: cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        raise BrokerConfigError(f"{key}: {path} is not a regular file")
    if mode & stat.S_IROTH:
        raise BrokerConfigError(
            f"{key}: {path} is readable by others (mode {stat.S_IMODE(mode):04o}); "
            f"make it private: chmod o-rwx {path}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BrokerConfigError(f"{key}: cannot read {path}: {exc}") from exc
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
