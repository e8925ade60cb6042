"""The bet-sensor board (docs/devices.md, "Bet sensor board"): codec, pyusb backend, driver.

``frames`` encodes and decodes the reports, ``protocol`` turns reports into
snapshots, ``url`` reads the board's URL, ``simusb`` is the pyusb backend for
``simusb://host:port``, ``worker`` finds and reads a board on its own thread,
``lights`` writes its LIGHTS on another, and ``client`` is the driver
(``SensorBoardClient``).
"""

from drivers.errors import (
    BackendUnavailable,
    BadReport,
    DeviceError,
    DeviceTimeout,
    TransportError,
)
from drivers.sensors.client import SensorBoardClient, SensorLinkStats
from drivers.sensors.protocol import BoardOffline, BoardOnline, SensorEvent, SpotsSnapshot
from drivers.sensors.url import SensorUrl, parse_sensor_url

__all__ = [
    "BackendUnavailable",
    "BadReport",
    "BoardOffline",
    "BoardOnline",
    "DeviceError",
    "DeviceTimeout",
    "SensorBoardClient",
    "SensorEvent",
    "SensorLinkStats",
    "SensorUrl",
    "SpotsSnapshot",
    "TransportError",
    "parse_sensor_url",
]
