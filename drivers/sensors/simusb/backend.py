"""The pyusb backend for ``simusb://host:port``: one bus holding at most the board there.

See :mod:`drivers.sensors.simusb` for how TCP maps onto USB.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

import usb.backend
import usb.core

from drivers.errors import BadMessage
from drivers.sensors.simusb.libusb import (
    CONFIGURATION_DESCRIPTOR,
    ENDPOINTS,
    INTERFACE_DESCRIPTOR,
    LANGID_EN_US,
    LIBUSB_ERROR_BUSY,
    LIBUSB_ERROR_INVALID_PARAM,
    LIBUSB_ERROR_NO_DEVICE,
    LIBUSB_ERROR_NOT_FOUND,
    LIBUSB_ERROR_OVERFLOW,
    LIBUSB_ERROR_PIPE,
    ConfigurationDescriptor,
    DeviceDescriptor,
    EndpointDescriptor,
    InterfaceDescriptor,
    string_descriptor,
    usb_error,
)
from drivers.sensors.simusb.session import Handle, Session, SimDevice, SimUsbStats
from drivers.sensors.simusb.wire import (
    CONFIGURATION_VALUE,
    CONNECT_TIMEOUT_S,
    EP_IN,
    EP_OUT,
    INTERFACE,
    MAX_PACKET_BYTES,
    SCHEME,
    parse_url,
)

_log = logging.getLogger("drivers.sensors.simusb")


class SimUsbBackend(usb.backend.IBackend):  # type: ignore[misc]  # pyusb is untyped
    """pyusb backend for ``simusb://host:port``: one bus holding at most the board there."""

    def __init__(
        self, host: str, port: int, *, connect_timeout_s: float = CONNECT_TIMEOUT_S
    ) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.connect_timeout_s = connect_timeout_s
        self.stats = SimUsbStats()
        self._lock = threading.Lock()
        self._session: Session | None = None
        self._closed = False
        self._next_address = 1

    @classmethod
    def from_url(cls, url: str, **kwargs: float) -> SimUsbBackend:
        host, port = parse_url(url)
        return cls(host, port, **kwargs)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{SCHEME}://{host}:{self.port}"

    def __repr__(self) -> str:
        return f"<SimUsbBackend {self.url}>"

    # -- our own lifecycle ------------------------------------------------------

    def disconnect(self) -> None:
        """Let go of the board; the next enumeration connects afresh."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def close(self) -> None:
        """Disconnect for good; enumeration finds nothing afterwards."""
        with self._lock:
            self._closed = True
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def _finalize_object(self) -> None:
        if hasattr(self, "_lock"):
            self.close()

    def _connect(self) -> Session | None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s)
        except OSError as exc:
            _log.debug("simusb: no board at %s: %s", self.url, exc)
            self.stats.failed_connects += 1
            return None
        session = Session(sock, self._next_address, self.stats)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            identity = session.handshake(self.connect_timeout_s)
        except (OSError, BadMessage, usb.core.USBError) as exc:
            _log.debug("simusb: %s accepted but did not introduce a board: %s", self.url, exc)
            self.stats.failed_connects += 1
            session.close()
            return None
        self.stats.connects += 1
        self._next_address = self._next_address % 127 + 1
        _log.debug(
            "simusb: %s is %04x:%04x %r", self.url, identity.vid, identity.pid, identity.serial
        )
        return session

    # -- IBackend: enumeration and descriptors ----------------------------------

    def enumerate_devices(self) -> list[SimDevice]:
        with self._lock:
            if self._closed:
                return []
            session = self._session
            if session is None or not session.peek_alive():
                if session is not None:
                    session.close()
                session = self._session = self._connect()
            if session is None:
                return []
            descriptor = DeviceDescriptor(
                idVendor=session.identity.vid,
                idProduct=session.identity.pid,
                address=session.address,
            )
            return [SimDevice(session, descriptor)]

    def get_parent(self, dev: SimDevice) -> None:
        return None

    def get_device_descriptor(self, dev: SimDevice) -> DeviceDescriptor:
        return dev.descriptor

    def get_configuration_descriptor(self, dev: SimDevice, config: int) -> ConfigurationDescriptor:
        if config != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        return CONFIGURATION_DESCRIPTOR

    def get_interface_descriptor(
        self, dev: SimDevice, intf: int, alt: int, config: int
    ) -> InterfaceDescriptor:
        if config != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if intf != 0:
            raise IndexError(f"Invalid interface index {intf}")
        if alt != 0:
            raise IndexError(f"Invalid alternate setting index {alt}")
        return INTERFACE_DESCRIPTOR

    def get_endpoint_descriptor(
        self, dev: SimDevice, ep: int, intf: int, alt: int, config: int
    ) -> EndpointDescriptor:
        self.get_interface_descriptor(dev, intf, alt, config)
        if not 0 <= ep < len(ENDPOINTS):
            raise IndexError(f"Invalid endpoint index {ep}")
        return ENDPOINTS[ep]

    # -- IBackend: handles, configuration, interfaces ---------------------------

    @staticmethod
    def _live(handle: Handle) -> Session:
        if not handle.open or not handle.session.alive:
            raise usb_error(LIBUSB_ERROR_NO_DEVICE)
        return handle.session

    def open_device(self, dev: SimDevice) -> Handle:
        if not dev.session.alive:
            raise usb_error(LIBUSB_ERROR_NO_DEVICE)
        return Handle(dev.session, dev.descriptor)

    def close_device(self, dev_handle: Handle) -> None:
        if dev_handle.session.claimed_by is dev_handle:
            dev_handle.session.claimed_by = None
        dev_handle.open = False

    def set_configuration(self, dev_handle: Handle, config_value: int) -> None:
        session = self._live(dev_handle)
        if config_value not in (0, CONFIGURATION_VALUE):
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if session.claimed_by is not None and config_value != session.configuration:
            raise usb_error(LIBUSB_ERROR_BUSY)
        session.configuration = config_value

    def get_configuration(self, dev_handle: Handle) -> int:
        return self._live(dev_handle).configuration

    def set_interface_altsetting(self, dev_handle: Handle, intf: int, altsetting: int) -> None:
        self._live(dev_handle)
        if intf != INTERFACE or altsetting != 0:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def claim_interface(self, dev_handle: Handle, intf: int) -> None:
        session = self._live(dev_handle)
        if intf != INTERFACE or session.configuration != CONFIGURATION_VALUE:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        if session.claimed_by is not None and session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_BUSY)
        session.claimed_by = dev_handle

    def release_interface(self, dev_handle: Handle, intf: int) -> None:
        session = dev_handle.session
        if intf != INTERFACE or session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        session.claimed_by = None

    def is_kernel_driver_active(self, dev_handle: Handle, intf: int) -> bool:
        self._live(dev_handle)
        return False

    def detach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        self._live(dev_handle)
        raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def attach_kernel_driver(self, dev_handle: Handle, intf: int) -> None:
        self._live(dev_handle)
        raise usb_error(LIBUSB_ERROR_NOT_FOUND)

    def clear_halt(self, dev_handle: Handle, ep: int) -> None:
        self._live(dev_handle)

    # -- IBackend: transfers ----------------------------------------------------

    def _claimed(self, dev_handle: Handle, intf: int) -> Session:
        session = self._live(dev_handle)
        if intf != INTERFACE or session.claimed_by is not dev_handle:
            raise usb_error(LIBUSB_ERROR_NOT_FOUND)
        return session

    def intr_read(self, dev_handle: Handle, ep: int, intf: int, buff: Any, timeout: int) -> int:
        session = self._claimed(dev_handle, intf)
        if ep != EP_IN:
            raise usb_error(LIBUSB_ERROR_INVALID_PARAM)
        data = session.read_packet(ep, int(timeout))
        target = memoryview(buff).cast("B")
        if len(data) > len(target):
            # libusb: the device sent more than the buffer holds.
            raise usb_error(LIBUSB_ERROR_OVERFLOW)
        target[: len(data)] = data
        return len(data)

    def intr_write(self, dev_handle: Handle, ep: int, intf: int, data: Any, timeout: int) -> int:
        session = self._claimed(dev_handle, intf)
        if ep != EP_OUT:
            raise usb_error(LIBUSB_ERROR_INVALID_PARAM)
        payload = memoryview(data).cast("B").tobytes()
        # A transfer longer than the endpoint's packet goes out as several packets.
        chunks = [
            payload[i : i + MAX_PACKET_BYTES] for i in range(0, len(payload), MAX_PACKET_BYTES)
        ] or [b""]
        for chunk in chunks:
            session.write_packet(ep, chunk, int(timeout))
        return len(payload)

    def ctrl_transfer(
        self,
        dev_handle: Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: Any,
        timeout: int,
    ) -> int:
        session = self._live(dev_handle)
        target = memoryview(data).cast("B")
        if bmRequestType == 0x80 and bRequest == 0x06:  # GET_DESCRIPTOR
            kind, index = wValue >> 8, wValue & 0xFF
            answer = self._descriptor(session, dev_handle.descriptor, kind, index)
        elif bmRequestType == 0x80 and bRequest == 0x00:  # GET_STATUS
            answer = b"\x00\x00"
        elif bmRequestType == 0x80 and bRequest == 0x08:  # GET_CONFIGURATION
            answer = bytes([session.configuration])
        elif bmRequestType == 0x00 and bRequest == 0x09:  # SET_CONFIGURATION
            self.set_configuration(dev_handle, wValue & 0xFF)
            return 0
        else:
            # A real board stalls a request it does not support.
            raise usb_error(LIBUSB_ERROR_PIPE)
        answer = answer[: len(target)]
        target[: len(answer)] = answer
        return len(answer)

    @staticmethod
    def _descriptor(session: Session, descriptor: DeviceDescriptor, kind: int, index: int) -> bytes:
        if kind == 0x01 and index == 0:
            return descriptor.to_bytes()
        if kind == 0x02 and index == 0:
            return CONFIGURATION_DESCRIPTOR.to_bytes()
        if kind == 0x03:
            strings = {
                0: bytes([4, 0x03]) + LANGID_EN_US.to_bytes(2, "little"),
                descriptor.iProduct: string_descriptor(session.identity.product),
                descriptor.iSerialNumber: string_descriptor(session.identity.serial),
            }
            if index in strings:
                return strings[index]
        raise usb_error(LIBUSB_ERROR_PIPE)
