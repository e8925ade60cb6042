"""``table-controller history --config table.toml [--round N | --last 10] [--json]``.

Hand records from the journal. §5324.22(i)(4) and (i)(5)(iii) have the cards kept "in
a manner that permits the reconstruction of each hand" in case of a question or dispute, and
regulators ask a table to recall at least its last ten games. The journal's outbox keeps the
round records it published (at least the last 100, whatever it prunes), so ``--json`` prints the
very ``war-round/1`` payloads that were published on ``rounds``, from the table alone.

The journal is opened read only: the command may run beside the service. A round still in
progress (a power cut mid-round, say) has no record yet; the human output lists its cards so far.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TextIO

from table_controller.engine import EngineSnapshot, card_json
from table_controller.service.binding import restore
from table_controller.service.config import ConfigError, TableConfig, load_config
from table_controller.service.journal import Journal, JournalError
from table_controller.service.messages import MessageFactory

DEFAULT_LAST: Final = 10
# The alerts read to name the codes of the rounds shown: more than a day's worth.
ALERTS_READ: Final = 100_000
"""Regulators ask that a table recall at least its last ten games."""

EXIT_OK: Final = 0
EXIT_NOT_FOUND: Final = 1
EXIT_UNUSABLE: Final = 2


class HistoryError(RuntimeError):
    """The journal cannot be replayed; the message says which input and why."""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, help="table config (TOML)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--round", type=_positive, metavar="N", help="only round N")
    which.add_argument(
        "--last",
        type=_positive,
        default=DEFAULT_LAST,
        metavar="K",
        help=f"the last K rounds recorded (default {DEFAULT_LAST})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the war-round/1 payloads (a JSON array, oldest first)",
    )


# -- replay ------------------------------------------------------------------------------


def rebuild(
    cfg: TableConfig, journal: Journal, *, round_id: int | None = None, last: int = DEFAULT_LAST
) -> tuple[list[dict[str, Any]], EngineSnapshot]:
    """The ``war-round/1`` payloads asked for (oldest first), and the table as the journal
    leaves it. Round ``round_id`` only, or else the ``last`` rounds recorded.

    The records are the very messages the outbox holds (the journal keeps at least the last
    100 whatever it prunes); the table is the latest checkpoint and the inputs after it.
    """
    try:
        state = restore(cfg, journal).engine.snapshot()
    except JournalError as exc:
        raise HistoryError(str(exc)) from exc
    if round_id is None:
        messages = journal.last_messages("rounds", last)
    else:
        factory = MessageFactory(cfg, epoch=journal.epoch)
        found = journal.message_by_id(factory.round_id(round_id))
        messages = [] if found is None else [found]
    return [json.loads(m.payload) for m in messages], state


# -- the human form -----------------------------------------------------------------------


def money(cents: int | None) -> str:
    """Cents as currency units (``2500`` → ``25.00``); ``?`` where the board reads no values."""
    if cents is None:
        return "?"
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole}.{part:02d}"


def signed_money(cents: int | None) -> str:
    """A net with its sign: ``+50.00``, ``-12.50``, ``0.00``."""
    text = money(cents)
    return text if cents is None or cents <= 0 else f"+{text}"


def _npu(value: float) -> str:
    return f"{value:+g}" if value else "0"


def _cards_table(cards: Iterable[Mapping[str, Any]]) -> list[str]:
    lines = [f"    {'n':>4}  {'card':<4}  {'role':<12}  {'position':<8}  source"]
    for c in cards:
        card = c["card"] if c["card"] is not None else "?"
        position = "" if c["position"] is None else str(c["position"])
        lines.append(f"    {c['n']:>4}  {card:<4}  {c['role']:<12}  {position:<8}  {c['source']}")
    return lines


_DECISION_WORDS: Final = {"war": "goes to war", "surrender": "surrenders"}


def _hand_line(pos: Mapping[str, Any]) -> str:
    """``position 1: card 7H (tie), goes to war: war card KH (win)``."""
    if pos["card"] is None:
        return f"  position {pos['position']}: no card (tie wager without an initial wager: void)"
    line = f"  position {pos['position']}: card {pos['card']}"
    if pos["outcome"] is not None:
        line += f" ({pos['outcome']})"
    if pos["decision"] is not None:
        line += f", {_DECISION_WORDS.get(pos['decision'], pos['decision'])}"
    if pos["war_card"] is not None:
        line += f": war card {pos['war_card']}"
        if pos["war_outcome"] is not None:
            line += f" ({pos['war_outcome']})"
    return line


def alert_codes(journal: Journal) -> dict[str, str]:
    """Each alert's code by its id, from the alerts the journal still holds."""
    codes: dict[str, str] = {}
    for msg in journal.last_messages("alerts", ALERTS_READ):
        body = json.loads(msg.payload)
        codes.setdefault(str(body.get("alert")), str(body.get("code")))
    return codes


def render_round(
    record: Mapping[str, Any], currency: str = "", codes: Mapping[str, str] | None = None
) -> str:
    """One block: the round, every card in deal order with its role, each position's wagers."""
    unit = f" {currency}" if currency else ""
    head = f"round {record['round_id']}  rules {record['rules']}  shoe {record['shoe_id'] or '-'}"
    head += f"  dealer {record['dealer'] or '-'}"
    lines = [head, f"  started {record['started']}  ended {record['ended']}"]
    if record["void"]:
        lines.append(f"  VOID: {record['void_reason']}")
    lines.append("  cards in deal order:")
    lines += _cards_table(record["cards"])
    war = record["dealer_war_card"]
    dealer = f"  dealer card {record['dealer_card'] or '-'}"
    lines.append(dealer + (f", dealer war card {war}" if war else ""))
    for pos in record["positions"]:
        lines.append(_hand_line(pos))
        lines.append(
            f"    {'spot':<8}  {'amount':>10}  {'odds':>5}  {'result':<9}  {'per unit':>8}  "
            f"{'net':>10}"
        )
        for w in pos["wagers"]:
            lines.append(
                f"    {w['spot']:<8}  {money(w['amount']):>10}  {w['odds']:>5}  "
                f"{w['result']:<9}  {_npu(w['net_per_unit']):>8}  {signed_money(w['net']):>10}"
            )
        lines.append(f"    position net {signed_money(pos['net'])}{unit}")
    if not record["positions"]:
        lines.append("  no position played")
    lines.append(f"  players' net {signed_money(record['net'])}{unit}")
    if record["alerts"]:
        # By code first: an id alone tells a reader nothing (``codes``: alert id -> code).
        named = [f"{(codes or {}).get(a, '?')} ({a})" for a in record["alerts"]]
        lines.append(f"  alerts: {', '.join(named)}")
    return "\n".join(lines)


def render_in_progress(state: EngineSnapshot) -> str | None:
    """The round open now, if any card was taken or the wagers latched; None otherwise."""
    rnd = state.round
    if not (rnd.latched or rnd.cards):
        return None
    held = ", held by an open alert" if state.held else ""
    lines = [
        f"round {state.round_id} in progress: phase {state.phase.value}{held}; no record yet",
        "  cards so far:",
    ]
    lines += _cards_table(card_json(c) for c in rnd.cards)
    return "\n".join(lines)


# -- the command -------------------------------------------------------------------------


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"table-controller history: {exc}", file=err)
        return EXIT_UNUSABLE
    try:
        with Journal(cfg.storage.path, readonly=True) as journal:
            records, state = rebuild(cfg, journal, round_id=args.round, last=args.last)
            codes = alert_codes(journal)
    except (JournalError, HistoryError) as exc:
        print(f"table-controller history: {exc}", file=err)
        return EXIT_UNUSABLE
    in_progress = render_in_progress(state)
    if args.round is not None and not records:
        if in_progress is not None and state.round_id == args.round:
            print(in_progress, file=err)
        else:
            print(f"table-controller history: no round {args.round} in the journal", file=err)
        return EXIT_NOT_FOUND
    if args.json:
        print(json.dumps(records, indent=2, ensure_ascii=False), file=out)
        return EXIT_OK
    blocks = [render_round(r, cfg.table.currency, codes) for r in records]
    if args.round is None and in_progress is not None:
        blocks.append(in_progress)
    if not blocks:
        print("no rounds in the journal yet", file=out)
    else:
        print("\n\n".join(blocks), file=out)
    return EXIT_OK
