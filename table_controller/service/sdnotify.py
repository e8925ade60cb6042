"""systemd service notification (``sd_notify``): READY=1, WATCHDOG=1, STOPPING=1.

Only when systemd started us with ``NOTIFY_SOCKET`` set; a no-op otherwise. The
protocol is one datagram per message on a unix socket, so a few lines suffice.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def notify(message: str) -> bool:
    """Send ``message`` (e.g. ``"READY=1"``) to systemd; False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode("ascii"))
    except OSError as exc:
        log.warning("cannot notify systemd at %s: %s", address, exc)
        return False
    return True


def watchdog_interval_s() -> float | None:
    """Half the watchdog period systemd asked for (``WATCHDOG_USEC``), or None."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 2_000_000, 0.1)
    except ValueError:
        return None
