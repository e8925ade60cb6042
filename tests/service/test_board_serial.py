"""The sensor board in use is named in ``status``; an unpinned board is warned about.

A USB gadget with the board's VID:PID would otherwise be taken for it unnoticed.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from simulators.board import DEFAULT_SERIAL
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig, TableSpec


async def test_status_names_the_board_serial_and_an_unpinned_url_is_warned(
    mosquitto: MosquittoBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="table_controller.service.devices")
    async with TableRig(
        mosquitto.url, tmp_path, TableSpec(seed=2, rules="ny", pin_board=False)
    ) as rig:
        await rig.start_controller()
        status = await rig.wait_status(
            lambda s: (
                s["devices"]["sensors"]["state"] == "ok"
                and s["devices"]["sensors"]["detail"] is not None
            )
        )
    assert status["devices"]["sensors"]["detail"] == f"serial {DEFAULT_SERIAL}"
    assert any("no board serial pinned" in r.getMessage() for r in caplog.records)


async def test_a_pinned_board_is_not_warned_about(
    mosquitto: MosquittoBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="table_controller.service.devices")
    async with TableRig(mosquitto.url, tmp_path, TableSpec(seed=2, rules="ny")) as rig:
        await rig.start_controller()
        status = await rig.wait_status(
            lambda s: (
                s["devices"]["sensors"]["state"] == "ok"
                and s["devices"]["sensors"]["detail"] is not None
            )
        )
    assert status["devices"]["sensors"]["detail"] == f"serial {DEFAULT_SERIAL}"
    assert not any("no board serial pinned" in r.getMessage() for r in caplog.records)
