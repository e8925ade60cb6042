"""What the simusb backend shows pyusb: libusb's error codes and the board's descriptors.

The descriptors are the board's (docs/devices.md): one configuration, interface 0
(vendor class) with interrupt IN ``0x81`` and interrupt OUT ``0x01``, 64-byte
packets; string descriptors answer the product and serial of the ``device``
message.
"""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass

import usb.backend
import usb.core

from drivers.sensors.simusb.wire import (
    CONFIGURATION_VALUE,
    EP_IN,
    EP_OUT,
    INTERFACE,
    MAX_PACKET_BYTES,
)

# libusb 1.0 error codes, so that callers see exactly what the libusb backend raises.
LIBUSB_ERROR_IO = -1
LIBUSB_ERROR_INVALID_PARAM = -2
LIBUSB_ERROR_NO_DEVICE = -4
LIBUSB_ERROR_NOT_FOUND = -5
LIBUSB_ERROR_BUSY = -6
LIBUSB_ERROR_TIMEOUT = -7
LIBUSB_ERROR_OVERFLOW = -8
LIBUSB_ERROR_PIPE = -9

_ERRORS: dict[int, tuple[str, int]] = {
    LIBUSB_ERROR_IO: ("Input/output error", errno.EIO),
    LIBUSB_ERROR_INVALID_PARAM: ("Invalid parameter", errno.EINVAL),
    LIBUSB_ERROR_NO_DEVICE: ("No such device (it may have been disconnected)", errno.ENODEV),
    LIBUSB_ERROR_NOT_FOUND: ("Entity not found", errno.ENOENT),
    LIBUSB_ERROR_BUSY: ("Resource busy", errno.EBUSY),
    LIBUSB_ERROR_TIMEOUT: ("Operation timed out", errno.ETIMEDOUT),
    LIBUSB_ERROR_OVERFLOW: ("Overflow", errno.EOVERFLOW),
    LIBUSB_ERROR_PIPE: ("Pipe error", errno.EPIPE),
}


def usb_error(code: int) -> usb.core.USBError:
    """The exception libusb's pyusb backend raises for a libusb error code."""
    text, err = _ERRORS[code]
    if code == LIBUSB_ERROR_TIMEOUT:
        return usb.core.USBTimeoutError(text, code, err)
    return usb.core.USBError(text, code, err)


# ----------------------------------------------------------------------- descriptors


@dataclass(frozen=True, slots=True)
class DeviceDescriptor:
    idVendor: int
    idProduct: int
    address: int
    bLength: int = 18
    bDescriptorType: int = 0x01
    bcdUSB: int = 0x0200
    bDeviceClass: int = 0x00
    bDeviceSubClass: int = 0x00
    bDeviceProtocol: int = 0x00
    bMaxPacketSize0: int = 64
    bcdDevice: int = 0x0100
    iManufacturer: int = 0
    iProduct: int = 1
    iSerialNumber: int = 2
    bNumConfigurations: int = 1
    bus: int = 1
    port_number: int = 1
    port_numbers: tuple[int, ...] = (1,)
    speed: int = 2  # LIBUSB_SPEED_FULL

    def to_bytes(self) -> bytes:
        return struct.pack(
            "<BBHBBBBHHHBBBB",
            self.bLength,
            self.bDescriptorType,
            self.bcdUSB,
            self.bDeviceClass,
            self.bDeviceSubClass,
            self.bDeviceProtocol,
            self.bMaxPacketSize0,
            self.idVendor,
            self.idProduct,
            self.bcdDevice,
            self.iManufacturer,
            self.iProduct,
            self.iSerialNumber,
            self.bNumConfigurations,
        )


@dataclass(frozen=True, slots=True)
class EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 0x05
    bmAttributes: int = 0x03  # interrupt
    wMaxPacketSize: int = MAX_PACKET_BYTES
    bInterval: int = 1
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        return struct.pack(
            "<BBBBHB",
            self.bLength,
            self.bDescriptorType,
            self.bEndpointAddress,
            self.bmAttributes,
            self.wMaxPacketSize,
            self.bInterval,
        )


@dataclass(frozen=True, slots=True)
class InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x04
    bInterfaceNumber: int = INTERFACE
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = 0xFF  # vendor-specific
    bInterfaceSubClass: int = 0x00
    bInterfaceProtocol: int = 0x00
    iInterface: int = 0
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        return bytes(
            [
                self.bLength,
                self.bDescriptorType,
                self.bInterfaceNumber,
                self.bAlternateSetting,
                self.bNumEndpoints,
                self.bInterfaceClass,
                self.bInterfaceSubClass,
                self.bInterfaceProtocol,
                self.iInterface,
            ]
        )


ENDPOINTS = (EndpointDescriptor(EP_IN), EndpointDescriptor(EP_OUT))
INTERFACE_DESCRIPTOR = InterfaceDescriptor()


@dataclass(frozen=True, slots=True)
class ConfigurationDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x02
    wTotalLength: int = 9 + 9 + 7 + 7
    bNumInterfaces: int = 1
    bConfigurationValue: int = CONFIGURATION_VALUE
    iConfiguration: int = 0
    bmAttributes: int = 0x80  # bus-powered
    bMaxPower: int = 50  # 100 mA in 2 mA units
    extra_descriptors: tuple[int, ...] = ()

    def to_bytes(self) -> bytes:
        head = struct.pack(
            "<BBHBBBBB",
            self.bLength,
            self.bDescriptorType,
            self.wTotalLength,
            self.bNumInterfaces,
            self.bConfigurationValue,
            self.iConfiguration,
            self.bmAttributes,
            self.bMaxPower,
        )
        return head + INTERFACE_DESCRIPTOR.to_bytes() + b"".join(ep.to_bytes() for ep in ENDPOINTS)


CONFIGURATION_DESCRIPTOR = ConfigurationDescriptor()
LANGID_EN_US = 0x0409


def string_descriptor(text: str) -> bytes:
    encoded = text.encode("utf-16-le")[:252]
    return bytes([2 + len(encoded), 0x03]) + encoded
