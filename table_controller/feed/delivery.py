"""What recorders send the table: ``table-ack/1`` on ``ack``, ``table-replay/1`` on ``replay``.

Together they make delivery end to end (docs/feed.md): an ack lets the table prune what
a recorder has committed; a replay asks for a range of the feed again.
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal

from pydantic import Field, model_validator

from table_controller.feed.common import EPOCH_TEXT, Epoch, FeedSeq, Ident, Payload, schema_field
from table_controller.feed.topics import Topic

MAX_REPLAY: Final = 10_000
"""At most this many messages per replay request, both ends included (docs/feed.md)."""

RECORDER_TEXT: Final = "the recorder's name"
ID_TEXT: Final = "the message's id, if the recorder gives one: the table needs none"


class TableAck(Payload):
    """`ack` (retained): every message of `epoch` up to `feed_seq` is committed."""

    TOPIC: ClassVar[Topic] = Topic.ACK

    schema_: Literal["table-ack/1"] = schema_field("table-ack/1")
    id: Ident | None = Field(default=None, description=ID_TEXT)  # type: ignore[assignment]
    recorder: Ident = Field(description=RECORDER_TEXT)
    epoch: Epoch = Field(description=EPOCH_TEXT + "; the table's, acknowledged")
    feed_seq: FeedSeq = Field(
        description="every message of that epoch up to and including this `feed_seq` is "
        "committed in the recorder's database (published only after the commit)"
    )


class TableReplay(Payload):
    """`replay`: publish the messages `from_feed_seq`..`to_feed_seq` of `epoch` again."""

    TOPIC: ClassVar[Topic] = Topic.REPLAY

    schema_: Literal["table-replay/1"] = schema_field("table-replay/1")
    id: Ident | None = Field(default=None, description=ID_TEXT)  # type: ignore[assignment]
    recorder: Ident = Field(description=RECORDER_TEXT)
    epoch: Epoch = Field(description=EPOCH_TEXT + "; the table's, asked for")
    from_feed_seq: FeedSeq = Field(description="the first `feed_seq` wanted")
    to_feed_seq: FeedSeq = Field(
        description=f"the last `feed_seq` wanted, included; at most {MAX_REPLAY:,} messages "
        "from `from_feed_seq`"
    )

    @model_validator(mode="after")
    def _range(self) -> TableReplay:
        if self.to_feed_seq < self.from_feed_seq:
            raise ValueError("to_feed_seq is below from_feed_seq")
        if self.to_feed_seq - self.from_feed_seq + 1 > MAX_REPLAY:
            raise ValueError(f"a replay asks for at most {MAX_REPLAY} messages")
        return self
