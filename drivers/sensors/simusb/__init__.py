"""A pyusb backend that reaches a bet-sensor board over TCP: ``simusb://host:port``.

docs/devices.md ("The simulated board over TCP") lets a simulator or a test rig
stand in for the USB board. This module is a real ``usb.backend.IBackend``, so
the driver runs the very same pyusb calls it runs against libusb —
``usb.core.find(idVendor=…, idProduct=…, backend=…)``, ``claim_interface``,
``dev.read(0x81, 64, timeout)``, ``dev.write(0x01, data)`` — and only the bytes'
road differs.

The wire: the backend connects; every message is one line of JSON::

    board →  {"type": "device", "vid": 4617, "pid": 1, "serial": "…", "product": "…"}  (first, once)
    board →  {"type": "in", "ep": 129, "data": "<hex>"}      an interrupt IN packet
    → board  {"type": "out", "ep": 1, "data": "<hex>"}       an interrupt OUT packet

How it maps onto USB:

* One TCP connection is one plug-in of the board. Enumeration connects when no
  connection is up; if the board does not answer (nothing listening, or no
  ``device`` message) the bus is empty. While a connection is up, enumeration
  shows the same device again.
* The connection closing is the board being unplugged: every later transfer on
  it raises ``usb.core.USBError`` with errno ``ENODEV``, as libusb does, and the
  device must be found again (a new connection is a new device address).
* The descriptors are the board's: one configuration, interface 0 (vendor
  class) with interrupt IN ``0x81`` and interrupt OUT ``0x01``, 64-byte packets.
  String descriptors (product, serial) are answered from the ``device``
  message, so ``dev.product`` and ``dev.serial_number`` work.
* An interrupt read that sees no packet within its timeout raises
  ``usb.core.USBTimeoutError`` with libusb's code and ``ETIMEDOUT``; a timeout
  of 0 waits for ever, as in libusb.
* Lines that are not JSON, too long, or not messages of this protocol are
  counted and skipped; the connection resynchronises at the next newline.

Thread safety: reads, writes and control transfers may come from different
threads (libusb allows concurrent transfers); the driver in this package
makes all its calls from one worker thread anyway.
"""

from drivers.errors import BadMessage
from drivers.sensors.simusb.backend import SimUsbBackend
from drivers.sensors.simusb.libusb import (
    LIBUSB_ERROR_BUSY,
    LIBUSB_ERROR_IO,
    LIBUSB_ERROR_NO_DEVICE,
    LIBUSB_ERROR_NOT_FOUND,
    LIBUSB_ERROR_OVERFLOW,
    LIBUSB_ERROR_PIPE,
    LIBUSB_ERROR_TIMEOUT,
    usb_error,
)
from drivers.sensors.simusb.session import SimUsbStats
from drivers.sensors.simusb.wire import (
    EP_IN,
    EP_OUT,
    INTERFACE,
    MAX_LINE_BYTES,
    MAX_PACKET_BYTES,
    SCHEME,
    DeviceMessage,
    LineBuffer,
    PacketMessage,
    SimUsbMessage,
    decode_message,
    encode_message,
    parse_url,
)

__all__ = [
    "EP_IN",
    "EP_OUT",
    "INTERFACE",
    "LIBUSB_ERROR_BUSY",
    "LIBUSB_ERROR_IO",
    "LIBUSB_ERROR_NOT_FOUND",
    "LIBUSB_ERROR_NO_DEVICE",
    "LIBUSB_ERROR_OVERFLOW",
    "LIBUSB_ERROR_PIPE",
    "LIBUSB_ERROR_TIMEOUT",
    "MAX_LINE_BYTES",
    "MAX_PACKET_BYTES",
    "SCHEME",
    "BadMessage",
    "DeviceMessage",
    "LineBuffer",
    "PacketMessage",
    "SimUsbBackend",
    "SimUsbMessage",
    "SimUsbStats",
    "decode_message",
    "encode_message",
    "parse_url",
    "usb_error",
]
