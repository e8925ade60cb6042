"""Capped, jittered exponential backoff: one rule for every retry of the recorder."""

from __future__ import annotations

import random
from collections.abc import Callable


def backoff_delay(
    attempt: int, *, initial_s: float, cap_s: float, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait before retry ``attempt`` (0 first): full growth, half jitter.

    Doubling from ``initial_s`` up to ``cap_s``, then a random factor in
    [0.5, 1) so that many clients that lost the same server do not return in step.
    """
    base = min(cap_s, initial_s * 2.0 ** min(attempt, 30))
    return base * (0.5 + rand() / 2)
