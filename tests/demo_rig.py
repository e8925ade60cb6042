"""What the demo's tests read in its output: the broker line, the per-round lines
(the published round records) added up, and the summary line."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

ROUND = re.compile(
    r"^round\s+(?P<id>\d+)  dealer (?P<dealer>\S\S)(?: war (?P<dealer_war>\S\S))?  "
    r"(?P<hands>.+)  net (?P<net>\S+)  alerts (?P<alerts>\S+)$"
)
HAND = re.compile(
    r"^P(?P<pos>\d+) (?P<card>\S\S) (?P<outcome>win|lose|tie)(?: (?P<decision>war|surrender))?"
    r"(?: (?P<war_card>\S\S) (?P<war_outcome>win|lose|tie))?"
    r"(?P<ties>(?: (?:tie|war_tie) \$\d+\.\d\d (?:win|lose|void))*) (?P<net>[+-]\$\d+\.\d\d)$"
)
BROKER = re.compile(
    r"^broker mqtt://127\.0\.0\.1:(?P<port>\d+) \(watch: mosquitto_sub -h 127\.0\.0\.1 "
    r"-p (?P=port) -V mqttv(?:5|311) -t 'casino/demo/#' -v\)$"
)
SUMMARY = re.compile(
    r"^summary(?P<stopped> \(stopped\))?: rounds (?P<rounds>\d+), ties (?P<ties>\d+), "
    r"wars (?P<wars>\d+), surrenders (?P<surrenders>\d+), voids (?P<voids>\d+), "
    r"alerts (?P<alerts>\d+)(?: \((?P<codes>[^)]*)\))?, players' net (?P<net>\S+)$"
)


def cents(text: str) -> int:
    """``+$25.00`` → 2500, ``-$12.50`` → -1250."""
    m = re.fullmatch(r"([+-])\$(\d+)\.(\d\d)", text)
    assert m, f"not an amount: {text!r}"
    value = int(m[2]) * 100 + int(m[3])
    return -value if m[1] == "-" else value


@dataclass
class Totals:
    """What the printed per-round lines add up to."""

    round_ids: list[int]
    ties: int
    wars: int
    surrenders: int
    alerts: Counter[str]
    net: int
    tie_wagers: int = 0


def add_up(lines: list[str]) -> Totals:
    totals = Totals([], 0, 0, 0, Counter(), 0)
    for line in lines:
        m = ROUND.match(line)
        assert m, f"not a round line: {line!r}"
        totals.round_ids.append(int(m["id"]))
        hands = [HAND.match(h) for h in m["hands"].split(" | ")]
        assert all(hands), f"a hand that does not parse in {line!r}"
        hand_nets = 0
        for h in hands:
            assert h is not None
            totals.ties += h["outcome"] == "tie"
            totals.wars += h["decision"] == "war"
            totals.surrenders += h["decision"] == "surrender"
            # A war hand has a war card, and so does the dealer.
            assert (h["decision"] == "war") == (h["war_card"] is not None), line
            if h["war_card"] is not None:
                assert m["dealer_war"] is not None, line
            hand_nets += cents(h["net"])
            totals.tie_wagers += h["ties"].count("tie ")
        assert cents(m["net"]) == hand_nets, f"the round's net is not its hands' sum: {line!r}"
        totals.net += hand_nets
        if m["alerts"] != "-":
            totals.alerts.update(m["alerts"].split(","))
    return totals


def parse_summary(line: str) -> dict[str, Any]:
    m = SUMMARY.match(line)
    assert m, f"not a summary line: {line!r}"
    codes: Counter[str] = Counter()
    for part in (m["codes"] or "").split(", "):
        if part:
            code, n = part.split(" ")
            codes[code] = int(n)
    return {
        "stopped": m["stopped"] is not None,
        "rounds": int(m["rounds"]),
        "ties": int(m["ties"]),
        "wars": int(m["wars"]),
        "surrenders": int(m["surrenders"]),
        "voids": int(m["voids"]),
        "alerts": int(m["alerts"]),
        "codes": codes,
        "net": cents(m["net"]),
    }
