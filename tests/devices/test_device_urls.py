"""Device URLs in the table config: one that can never be opened is refused at start, by key.

pyserial reads the host, port and options of a ``socket://`` or ``rfc2217://`` URL only
when it opens the port, and a driver retries a failed open for ever; so the config reads
them as pyserial will, without opening anything or resolving a name.
"""

from __future__ import annotations

from typing import Any

import pytest
from serial import rfc2217
from serial.urlhandler import protocol_socket

from drivers.sensors.simusb import parse_url
from table_controller.service.config import ConfigError, parse_config


def _config(**devices: str) -> dict[str, Any]:
    return {
        "table": {"id": "war-07", "site": "main-floor"},
        "devices": {
            "shoe": "socket://127.0.0.1:7001",
            "console": "socket://127.0.0.1:7002",
            **devices,
        },
        "storage": {"path": "/tmp/war-07.sqlite3"},
    }


@pytest.mark.parametrize(
    ("key", "url", "complaint"),
    [
        ("console", "socket://127.0.0.1", "no port"),
        ("console", "socket://127.0.0.1:", "no port"),
        ("console", "socket://127.0.0.1:notaport", r"bad port \(1\.\.65535\)"),
        ("console", "socket://127.0.0.1:65536", r"bad port \(1\.\.65535\)"),
        ("console", "socket://127.0.0.1:0", r"bad port 0 \(1\.\.65535\)"),
        ("console", "socket://:7002", "no host"),
        ("console", "socket://[::1:7002", "Invalid IPv6 URL"),
        ("console", "socket://127.0.0.1:7002?timeout=3", "unknown option 'timeout'"),
        ("console", "socket://127.0.0.1:7002?logging=loud", "logging='loud' is not one of"),
        ("console", "socket://127.0.0.1:7002?logging", "logging='' is not one of"),
        ("shoe", "rfc2217://shoe-host", "no port"),
        ("shoe", "RFC2217://shoe-host", "no port"),
        ("shoe", "rfc2217://shoe-host:0", "bad port 0"),
        ("shoe", "rfc2217://shoe-host:2217?timeout=soon", "timeout='soon' is not a number"),
        ("shoe", "rfc2217://shoe-host:2217?timeout=0", "timeout='0' .* above 0"),
        ("shoe", "rfc2217://shoe-host:2217?baudrate=9600", "unknown option 'baudrate'"),
        ("sensors", "simusb://127.0.0.1:0", "bad port 0"),
    ],
)
def test_a_device_url_that_can_never_open_is_refused_by_key(
    key: str, url: str, complaint: str
) -> None:
    with pytest.raises(ConfigError, match=rf"^devices\.{key}: .*{complaint}"):
        parse_config(_config(**{key: url}))


@pytest.mark.parametrize(
    "url",
    [
        "socket://127.0.0.1:7002",
        "socket://[::1]:7002",
        "SOCKET://127.0.0.1:7002",
        "socket://localhost:7002?logging=debug",
        "rfc2217://shoe-host.invalid:2217",  # a name is not resolved at start
        "rfc2217://10.0.0.9:4001?ign_set_control&poll_modem&timeout=2.5&logging=warning",
        "/dev/war-shoe",
        "loop://",
    ],
)
def test_the_urls_pyserial_opens_stay_valid(url: str) -> None:
    cfg = parse_config(_config(shoe=url, console=url))
    assert (cfg.devices.shoe, cfg.devices.console) == (url, url)


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("socket://127.0.0.1:7002", ("127.0.0.1", 7002)),
        ("socket://[::1]:65535", ("::1", 65535)),
        ("rfc2217://shoe-host:1?poll_modem", ("shoe-host", 1)),
    ],
)
def test_what_is_accepted_pyserial_reads_alike(url: str, address: tuple[str, int]) -> None:
    """The host and port pyserial's own URL reader finds when it opens the port."""
    assert parse_config(_config(console=url)).devices.console == url
    reader = rfc2217.Serial() if url.startswith("rfc2217") else protocol_socket.Serial()
    assert reader.from_url(url) == address


def test_simusb_port_zero_is_no_port() -> None:
    with pytest.raises(ValueError, match=r"bad port 0 .*\(1\.\.65535\)"):
        parse_url("simusb://127.0.0.1:0")
    assert parse_url("simusb://127.0.0.1:65535") == ("127.0.0.1", 65535)
