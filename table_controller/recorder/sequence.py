"""Per table and epoch: the highest contiguous ``feed_seq``, and the gaps to ask for.

Sans-I/O: time arrives as ``now`` (monotonic seconds), randomness as ``rng``.

* ``contiguous``: every ``feed_seq`` up to it is committed (or a permanent gap).
  The first ``feed_seq`` of an epoch is 1 (docs/feed.md: +1 per message), so a new
  epoch starts at 0.
* A gap (docs/recorder.md) is a ``feed_seq`` above ``contiguous`` that is missing
  while a later one is stored, or below the ``last_feed_seq`` that the table's
  ``status`` announced. It is asked for once it has been missing for
  ``GAP_WAIT_S``, then again with capped, jittered backoff until it is filled
  or the table answers ``REPLAY_UNAVAILABLE``: then it is permanent, shown as
  such, and counted as settled so that the acknowledgement (and the table's
  pruning) can move past what the table no longer holds.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from drivers.backoff import backoff_delay

GAP_WAIT_S: Final = 2.0
REPLAY_RETRY_INITIAL_S: Final = 1.0
REPLAY_RETRY_MAX_S: Final = 10.0
REPLAY_MAX_SPAN: Final = 10_000  # docs/feed.md: at most 10,000 messages per replay


@dataclass(slots=True)
class SeqTrack:
    """The feed of one (site, table, epoch) as this recorder knows it."""

    contiguous: int = 0
    present: set[int] = field(default_factory=set)  # stored, above ``contiguous``
    permanent: list[tuple[int, int]] = field(default_factory=list)  # sorted, disjoint
    announced: int = 0
    hole_since: float | None = None
    attempts: int = 0
    next_request: float = 0.0
    # Each rise of the highest missing feed_seq, with when it was first seen: a hole's
    # part is asked for once it has been missing GAP_WAIT_S, whatever older holes wait.
    tops: list[tuple[int, float]] = field(default_factory=list)

    def add(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            if seq > self.contiguous:
                self.present.add(seq)

    def announce(self, last_feed_seq: int) -> None:
        self.announced = max(self.announced, last_feed_seq)

    def mark_permanent(self, first: int, last: int) -> None:
        """The table no longer holds ``first..last``: a known, permanent gap."""
        missing = [r for r in self.holes() if r[1] >= first and r[0] <= last]
        for lo, hi in missing:
            bisect.insort(self.permanent, (max(lo, first), min(hi, last)))

    def settle(self) -> bool:
        """Advance ``contiguous`` over stored seqs and permanent gaps; True if it moved."""
        start = self.contiguous
        while True:
            nxt = self.contiguous + 1
            if nxt in self.present:
                self.present.discard(nxt)
                self.contiguous = nxt
                continue
            gap = next((g for g in self.permanent if g[0] <= nxt <= g[1]), None)
            if gap is None:
                break
            self.contiguous = gap[1]
            self.present = {s for s in self.present if s > self.contiguous}
        if self.contiguous != start:
            self.hole_since = None
            self.attempts = 0
            self.next_request = 0.0
        return self.contiguous != start

    def holes(self) -> list[tuple[int, int]]:
        """Missing ranges above ``contiguous`` (inclusive), not counting permanent gaps."""
        top = max(max(self.present, default=0), self.announced)
        out: list[tuple[int, int]] = []
        seq = self.contiguous + 1
        stored = sorted(self.present)
        i = 0
        while seq <= top:
            while i < len(stored) and stored[i] < seq:
                i += 1
            if i < len(stored) and stored[i] == seq:
                seq += 1
                continue
            end = (stored[i] - 1) if i < len(stored) else top
            out.extend(_minus_permanent(seq, end, self.permanent))
            seq = end + 1
        return out

    def due(self, now: float, rng: random.Random | None = None) -> list[tuple[int, int]]:
        """The ranges to ask a ``replay`` for now (each at most 10,000 long), or none."""
        holes = self.holes()
        if not holes:
            self.hole_since = None
            self.attempts = 0
            self.tops.clear()
            return []
        if self.hole_since is None:
            self.hole_since = now
        top = holes[-1][1]
        if not self.tops or top > self.tops[-1][0]:
            self.tops.append((top, now))
        # A rise below the lowest hole tells nothing of the seqs still missing.
        while len(self.tops) > 1 and self.tops[0][0] < holes[0][0]:
            self.tops.pop(0)
        if now < self.next_request:
            return []
        ripe = max((t for t, since in self.tops if now - since >= GAP_WAIT_S), default=0)
        wanted = [(lo, min(hi, ripe)) for lo, hi in holes if lo <= ripe]
        if not wanted:
            return []
        self.next_request = now + backoff_delay(
            self.attempts, initial_s=REPLAY_RETRY_INITIAL_S, cap_s=REPLAY_RETRY_MAX_S, rng=rng
        )
        self.attempts += 1
        return [part for hole in wanted for part in split_range(*hole)]


def split_range(first: int, last: int) -> list[tuple[int, int]]:
    return [
        (lo, min(last, lo + REPLAY_MAX_SPAN - 1)) for lo in range(first, last + 1, REPLAY_MAX_SPAN)
    ]


def _minus_permanent(
    first: int, last: int, permanent: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    seq = first
    for lo, hi in permanent:
        if hi < seq or lo > last:
            continue
        if lo > seq:
            out.append((seq, lo - 1))
        seq = max(seq, hi + 1)
    if seq <= last:
        out.append((seq, last))
    return out
