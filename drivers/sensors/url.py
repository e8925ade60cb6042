"""Sensor-board URLs: ``usb://VID:PID[?serial=…]`` and ``simusb://host:port[?serial=…]``.

``usb://VID:PID`` (hex) names the real board through libusb; ``usb://`` alone
means ``usb://1209:0001``, docs/devices.md's default. ``simusb://host:port`` names a
simulated board or test rig over TCP (the :mod:`drivers.sensors.simusb` backend).

``?serial=…`` pins the board's serial number (its USB ``iSerialNumber``
string): only a board with exactly that serial is taken. Without it, any
device with the VID:PID is, and ``1209:0001`` is the pid.codes test id that any
USB gadget may carry; a table should pin its board.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from drivers.errors import BadDeviceUrl
from drivers.sensors.simusb import parse_url as parse_simusb_url

DEFAULT_VID = 0x1209
DEFAULT_PID = 0x0001

_FORMS = "usb://VID:PID[?serial=SERIAL] or simusb://host:port[?serial=SERIAL]"


@dataclass(frozen=True, slots=True)
class SensorUrl:
    """A parsed sensor-board URL."""

    scheme: Literal["usb", "simusb"]
    vid: int
    pid: int
    host: str = ""
    port: int = 0
    serial: str | None = None
    """The board's serial number, when the URL pins one; None takes any board."""

    @property
    def serial_pinned(self) -> bool:
        """Whether only the board with one serial number is taken (issue: a gadget with the
        default VID:PID must not pass for the sensor board)."""
        return self.serial is not None

    def matches(self, serial: str | None) -> bool:
        """Whether a device reporting ``serial`` is the board this URL names."""
        return self.serial is None or serial == self.serial


def parse_usb_id(text: str, what: str = "a USB id") -> int:
    """A VID or PID written as up to 4 hex digits; BadDeviceUrl naming ``what`` otherwise."""
    if not text or len(text) > 4 or text.strip("0123456789abcdefABCDEF"):
        raise BadDeviceUrl(f"{what} must be 4 hex digits, not {text!r}")
    return int(text, 16)


def _hex16(text: str, what: str, url: str) -> int:
    try:
        return parse_usb_id(text, what)
    except BadDeviceUrl as exc:
        raise BadDeviceUrl(f"{what} must be 4 hex digits in {url!r}") from exc


def _serial(query: str, url: str) -> str | None:
    if not query:
        return None
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise BadDeviceUrl(f"cannot read the query of {url!r}: expected ?serial=SERIAL") from exc
    unknown = sorted(set(fields) - {"serial"})
    if unknown:
        raise BadDeviceUrl(f"unknown option {unknown[0]!r} in {url!r}: only ?serial=SERIAL")
    values = fields["serial"]
    if len(values) != 1 or not values[0].strip():
        raise BadDeviceUrl(f"?serial= needs one non-empty serial number in {url!r}")
    return values[0]


def parse_sensor_url(url: str, *, vid: int | None = None, pid: int | None = None) -> SensorUrl:
    """Parse a sensor-board URL; ``vid``/``pid`` override the URL's. BadDeviceUrl (a
    ValueError) names what is wrong."""
    parts = urlsplit(url)
    serial = _serial(parts.query, url)
    if parts.scheme == "usb":
        if parts.path not in ("", "/") or parts.fragment:
            raise BadDeviceUrl(f"expected {_FORMS}, not {url!r}")
        url_vid, url_pid = DEFAULT_VID, DEFAULT_PID
        if parts.netloc:
            vid_text, sep, pid_text = parts.netloc.partition(":")
            if not sep:
                raise BadDeviceUrl(f"expected usb://VID:PID, not {url!r}")
            url_vid = _hex16(vid_text, "VID", url)
            url_pid = _hex16(pid_text, "PID", url)
        return SensorUrl(
            "usb",
            url_vid if vid is None else vid,
            url_pid if pid is None else pid,
            serial=serial,
        )
    if parts.scheme == "simusb":
        try:
            host, port = parse_simusb_url(parts._replace(query="").geturl())
        except ValueError as exc:
            raise BadDeviceUrl(str(exc)) from exc
        return SensorUrl(
            "simusb",
            DEFAULT_VID if vid is None else vid,
            DEFAULT_PID if pid is None else pid,
            host,
            port,
            serial,
        )
    raise BadDeviceUrl(f"a sensor board URL is {_FORMS}, not {url!r}")
