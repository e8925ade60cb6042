"""JOURNAL_FAULT with the real devices: the journal's disk (a 2 MB tmpfs) filled to the
brim mid-round. The card read meanwhile is not acted on and a press gets
``NAK,<k>,JOURNAL_FAULT``; once there is room the table goes on by itself and the read comes
back from the shoe by ``RESEND``, published like any other."""

from __future__ import annotations

from pathlib import Path

from drivers.lineframe.cards import Card
from table_controller.rigs.broker import MosquittoBroker
from table_controller.rigs.rig import TableRig, TableSpec
from tests.service.journal_tables import fill

ORDER = [Card.parse(c) for c in ("9C", "KH", "5D", "2C", "AS", "QD")]


async def test_a_full_disk_stops_the_table_and_the_read_comes_back_by_resend(
    own_mosquitto: MosquittoBroker, small_disk: Path
) -> None:
    spec = TableSpec(cards=ORDER, cover_after=len(ORDER), rules="ny")
    async with TableRig(own_mosquitto.url, small_disk, spec) as rig:
        await rig.start_controller()
        await rig.wait_online()
        assert await rig.press("SHUFFLED") is None
        assert await rig.press("DEALER", "D-7") is None
        rig.bet(1, initial=1000)
        await rig.wait_wagers({1: {"initial": 1000}})
        assert await rig.press("NO_MORE_BETS") is None
        rig.shoe.draw()  # the burn card
        await rig.wait_state(lambda s: s["burn_cards"] == 1)

        filler = fill(small_disk)
        rig.shoe.draw()  # position 1's KH: the journal cannot take it
        await rig.wait(
            lambda o: any(a["code"] == "JOURNAL_FAULT" for a in o.of("alerts")), timeout=20
        )
        assert await rig.press("VOID_ROUND") == "JOURNAL_FAULT"
        assert rig.observer is not None
        assert not [e for e in rig.observer.of("events") if e.get("card") == "KH"]

        filler.unlink()
        # The table recovers by itself; the shoe is asked again for read 2.
        await rig.wait(
            lambda o: any(e["type"] == "card" and e["card"] == "KH" for e in o.of("events")),
            timeout=20,
        )
        await rig.wait(
            lambda o: any(a.get("resolved_by") == "JOURNAL" for a in o.of("alerts")), timeout=20
        )
        rig.shoe.draw()  # the dealer's 5D: the round settles as if nothing had happened
        (record,) = await rig.wait_rounds(1)
        assert [c["card"] for c in record["cards"]] == ["9C", "KH", "5D"]
        assert record["positions"][0]["outcome"] == "win"
        await rig.stop_controller()
