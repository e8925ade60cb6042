"""Every feed the recorder follows: its progress, its gaps, and the acks and replays due.

The book is fed what a commit stored; it keeps one :class:`SeqTrack` per
(site, table, epoch), loaded from the database at first sight (so a restarted
recorder, or one of several in a group, starts from what all of them
committed) and reloaded while a hole stays open (another recorder of the group
may have stored the message). It says which ``ack`` and which ``replay`` to
publish (``docs/feed.md``): an ack only for a table's current epoch, since a table
with a new journal holds nothing of the old one.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from table_controller.recorder.errors import DatabaseUnavailable
from table_controller.recorder.intake import SEQUENCED, FeedMessage, announced, unavailable
from table_controller.recorder.sequence import SeqTrack
from table_controller.recorder.store.backend import Backend
from table_controller.recorder.store.writer import (
    Key,
    load_track,
    save_permanent,
    save_progress,
    stored_status,
)
from table_controller.recorder.times import now_text

log = logging.getLogger(__name__)

# A hole older than this is looked up in the database again before it is asked for.
RELOAD_AFTER_S: Final = 0.5
# A gap of an epoch its table no longer announces is given up as permanent only once
# another epoch has been the table's this long: a second controller configured as the
# same table announces its own for a moment before it yields (docs/feed.md), and the
# table's journal still holds the gap.
SUPERSEDED_AFTER_S: Final = 600.0


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message for a table: its ``ack`` (retained) or a ``replay`` request."""

    topic: str
    payload: bytes
    retain: bool


class FeedBook:
    def __init__(self, recorder: str, *, rng: random.Random | None = None) -> None:
        self.recorder = recorder
        self.tracks: dict[Key, SeqTrack] = {}
        self.prefixes: dict[tuple[str, str], str] = {}
        self.current: dict[tuple[str, str], str] = {}  # the epoch a table announces
        self._acked: dict[tuple[str, str], tuple[str, int]] = {}
        self._dirty: set[Key] = set()
        self._reloaded: dict[Key, float] = {}
        self._superseded: dict[Key, float] = {}  # since when another epoch is current
        self._rng = rng

    async def track(self, db: Backend, key: Key) -> SeqTrack:
        track = self.tracks.get(key)
        if track is None:
            track = self.tracks[key] = await load_track(db, key)
        return track

    async def with_epochs(self, db: Backend, batch: list[FeedMessage]) -> list[FeedMessage]:
        """Each sequenced message with its epoch: an ``alerts`` message carries none (and a
        table may put ``epoch`` on its events alone), so it is dealt in the epoch the table
        announced last: in a status received, or else in the one the database holds (a
        restarted recorder is handed what its session kept before any retained status).

        One that comes before any epoch is known is left out: stored without it, it could
        never be found under its epoch, and a replay of it would be a duplicate by ``id``.
        Unacknowledged, it stays with the table, and the replay brings it again once the
        table's ``status`` has named the epoch.
        """
        out = []
        for msg in batch:
            if msg.misplaced:
                out.append(msg)  # stored as it came; no table's feed is told of it
                continue
            table = (msg.site, msg.table)
            feed = announced(msg)
            if feed is not None:
                self.current[table] = feed[0]
            elif msg.epoch is not None and msg.leaf in SEQUENCED:
                self.current.setdefault(table, msg.epoch)
            elif msg.feed_seq is not None and msg.leaf in SEQUENCED:
                epoch = self.current.get(table) or await self._stored_epoch(db, table)
                if epoch is None:
                    log.info(
                        "%s/%s feed_seq %d: no epoch known yet, left for the replay",
                        msg.site,
                        msg.table,
                        msg.feed_seq,
                    )
                    continue
                msg = replace(msg, epoch=epoch)
            out.append(msg)
        return out

    async def _stored_epoch(self, db: Backend, table: tuple[str, str]) -> str | None:
        try:
            status = await stored_status(db, *table)
        except DatabaseUnavailable:
            return None  # left for the replay, as when no status is known
        feed = status.get("feed") if status is not None else None
        epoch = feed.get("epoch") if isinstance(feed, dict) else None
        if not isinstance(epoch, str) or not epoch:
            return None
        self.current[table] = epoch
        return epoch

    async def absorb(self, db: Backend, batch: Iterable[FeedMessage]) -> None:
        """Take in a committed batch (new messages and duplicates alike)."""
        for msg in batch:
            if msg.misplaced:
                continue  # neither the table it names nor the one whose topic it came on
            table = (msg.site, msg.table)
            self.prefixes[table] = msg.prefix
            feed = announced(msg)
            if feed is not None:
                epoch, last = feed
                self.current[table] = epoch
                (await self.track(db, (*table, epoch))).announce(last)
                self._dirty.add((*table, epoch))
            key = msg.key
            if key is None or msg.feed_seq is None:
                continue
            self.current.setdefault(table, key[2])
            (await self.track(db, key)).add((msg.feed_seq,))
            self._dirty.add(key)
            gone = unavailable(msg)
            if gone is not None:
                for first, last in gone[1]:
                    await self._permanent(db, (*table, gone[0]), first, last)
        for key in self._dirty:
            self.tracks[key].settle()

    async def _permanent(self, db: Backend, key: Key, first: int, last: int) -> None:
        track = await self.track(db, key)
        before = list(track.permanent)
        track.mark_permanent(first, last)
        added = sorted(set(track.permanent) - set(before))
        if added:
            log.warning("%s/%s epoch %s: feed_seq %s no longer held: a permanent gap", *key, added)
            try:
                await save_permanent(db, key, added, now=now_text())
            except BaseException:
                track.permanent = before  # not stored: marked again when retried
                raise

    def acks(self) -> list[Outgoing]:
        """The ``ack`` of every table whose committed feed moved since the last call."""
        out: list[Outgoing] = []
        for (site, table, epoch), track in self.tracks.items():
            name = (site, table)
            if self.current.get(name, epoch) != epoch or track.contiguous < 1:
                continue
            if self._acked.get(name) == (epoch, track.contiguous):
                continue
            self._acked[name] = (epoch, track.contiguous)
            body = self._envelope("table-ack/1", site, table)
            body.update({"recorder": self.recorder, "epoch": epoch, "feed_seq": track.contiguous})
            out.append(Outgoing(f"{self.prefixes[name]}/ack", _json(body), retain=True))
        return out

    def forget_acks(self) -> None:
        """Publish every table's ack again (a new connection: the broker may have lost them)."""
        self._acked.clear()

    async def check(self, db: Backend, now: float) -> list[Outgoing]:
        """Reload open holes from the database; the ``replay`` requests due now."""
        out: list[Outgoing] = []
        for key, track in list(self.tracks.items()):
            if not track.holes():
                continue
            self._dirty.add(key)
            held = track.hole_since is not None and now - track.hole_since >= RELOAD_AFTER_S
            if held and now - self._reloaded.get(key, 0.0) >= RELOAD_AFTER_S:
                self._reloaded[key] = now
                await load_track(db, key, track)
            site, table, epoch = key
            due = track.due(now, self._rng)
            if self.current.get((site, table), epoch) == epoch:
                self._superseded.pop(key, None)
                gone = False
            else:
                gone = now - self._superseded.setdefault(key, now) >= SUPERSEDED_AFTER_S
                if not gone:
                    continue  # not asked for: the table ignores a replay for another epoch
            for first, last in due:
                if gone:
                    # The table has a new journal: it answers no replay for this epoch and
                    # holds nothing of it (docs/recorder.md), so the gap is a known one.
                    await self._permanent(db, key, first, last)
                    continue
                body = self._envelope("table-replay/1", site, table)
                body.update(
                    {
                        "recorder": self.recorder,
                        "epoch": epoch,
                        "from_feed_seq": first,
                        "to_feed_seq": last,
                    }
                )
                log.info("%s/%s epoch %s: asking for feed_seq %d-%d", *key, first, last)
                out.append(Outgoing(f"{self.prefixes[(site, table)]}/replay", _json(body), False))
        return out

    async def save(self, db: Backend) -> None:
        """Write the progress and pending gaps of the feeds that changed."""
        dirty, self._dirty = self._dirty, set()
        try:
            await save_progress(db, ((k, self.tracks[k]) for k in dirty), now=now_text())
        except BaseException:
            self._dirty |= dirty
            raise

    def _envelope(self, schema: str, site: str, table: str) -> dict[str, object]:
        return {
            "schema": schema,
            "id": str(uuid.uuid4()),
            "table": table,
            "site": site,
            "ts": now_text(),
        }


def _json(body: dict[str, object]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode("utf-8")
