"""Run the table's Publisher against a broker until it logs its first warning.

A child process for test_publisher_tls.py: a refused TLS handshake leaves a
socket behind in paho-mqtt 2.2 (see that test), which must not count against
the test process's leak guard. Prints one JSON line:
``{"warning": "...", "connects": N, "connected": bool}``.

    python -m tests.deploy.publisher_probe URL CA_FILE USERNAME PASSWORD_FILE JOURNAL
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import uuid
from pathlib import Path

from table_controller.service.config import MqttSection
from table_controller.service.journal import Journal, OutboxMessage
from table_controller.service.publisher import Publisher

WAIT_S = 20.0


class _FirstWarning(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = asyncio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.seen.set()


async def probe(url: str, ca_file: str, username: str, password_file: str, journal: str) -> int:
    topic = f"casino/probe/table/{username}"
    handler = _FirstWarning()
    logging.getLogger("table_controller.service.publisher").addHandler(handler)
    store = Journal(Path(journal))
    try:
        store.enqueue([OutboxMessage(uuid.uuid4().hex, f"{topic}/events", b"{}", 1, False)])
        publisher = Publisher(
            MqttSection(
                url=url,
                ca_file=Path(ca_file),
                username=username,
                password_file=Path(password_file),
            ),
            client_id=username,
            journal=store,
            will=lambda: OutboxMessage(uuid.uuid4().hex, f"{topic}/status", b"{}", 1, True),
        )
        task = asyncio.create_task(publisher.run(), name="publisher-probe")
        try:
            async with asyncio.timeout(WAIT_S):
                await handler.seen.wait()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        print(
            json.dumps(
                {
                    "warning": handler.messages[0],
                    "connects": publisher.connects,
                    "connected": publisher.connected,
                }
            )
        )
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(asyncio.run(probe(*sys.argv[1:])))
