"""Capped, jittered backoff: the one delay rule of every reconnect in the project.

A supervisor owns each reconnect, and every one waits by this one rule. The
shoe and console links, the sensor board's worker, the simulators' reopening
of a serial device, the service's MQTT publisher and the recorder (its broker,
its database and the replays it asks for) all wait :func:`backoff_delay`
between attempts.
"""

from __future__ import annotations

import random

BACKOFF_INITIAL_S = 0.1
BACKOFF_CAP_S = 2.0
"""Device reconnect delays double from the initial one up to this cap; a device that
returns is found within the cap (well inside the 5 s a replugged device has to recover)."""

_MAX_DOUBLINGS = 32
"""Beyond this many doublings every delay is the cap anyway; bounding the exponent keeps
``2.0 ** attempt`` from overflowing after days of retrying."""


def backoff_delay(
    attempt: int,
    *,
    initial_s: float = BACKOFF_INITIAL_S,
    cap_s: float = BACKOFF_CAP_S,
    rng: random.Random | None = None,
) -> float:
    """Delay before reconnect ``attempt`` (0-based): doubling, capped, jittered to 50–100 %.

    Jitter keeps many tables that lost the same network (or the same broker) from
    reconnecting in step. ``rng`` makes the jitter reproducible in tests.
    """
    if attempt < 0:
        raise ValueError(f"attempt counts from 0, not {attempt}")
    if initial_s <= 0 or cap_s < initial_s:
        raise ValueError(f"backoff needs 0 < initial_s <= cap_s, not {initial_s}, {cap_s}")
    base = min(cap_s, initial_s * 2.0 ** min(attempt, _MAX_DOUBLINGS))
    jitter: float = (rng or random).uniform(0.5, 1.0)
    return base * jitter
