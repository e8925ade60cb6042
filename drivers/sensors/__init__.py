"""The bet-sensor board (DEVICES.md, "Bet sensor board"): codec, pyusb backend, driver.

``frames`` encodes and decodes the reports, ``protocol`` turns reports into
snapshots, ``simusb`` is the pyusb backend for ``simusb://host:port`` and
``client`` is the driver (``SensorBoardClient``).
"""

from drivers.sensors.client import SensorBoardClient, SensorLinkStats, parse_sensor_url
from drivers.sensors.errors import (
    BackendUnavailable,
    BadReport,
    DeviceError,
    DeviceTimeout,
    SensorBoardError,
    TransportError,
)
from drivers.sensors.protocol import BoardOffline, BoardOnline, SensorEvent, SpotsSnapshot

__all__ = [
    "BackendUnavailable",
    "BadReport",
    "BoardOffline",
    "BoardOnline",
    "DeviceError",
    "DeviceTimeout",
    "SensorBoardClient",
    "SensorBoardError",
    "SensorEvent",
    "SensorLinkStats",
    "SpotsSnapshot",
    "TransportError",
    "parse_sensor_url",
]
