"""Errors of every device driver, sorted by what the caller can do (STYLE.md, convention 6)."""

from __future__ import annotations


class DeviceLinkError(Exception):
    """Base of every error raised by a device driver."""


class TransportError(DeviceLinkError):
    """The link failed or is not up; retrying later (after a reconnect) may succeed."""


class DeviceError(DeviceLinkError):
    """The device answered with something unusable or refused what was asked."""


class DeviceTimeout(DeviceLinkError):
    """The device did not answer in time; retrying may help."""
