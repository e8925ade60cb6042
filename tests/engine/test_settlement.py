"""Settlement per profile, checked against docs/rules.md's table (values written from the spec)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from table_controller.engine import npu_json, wager_net
from table_controller.engine.rules import NY, STANDARD, UK, RulesProfile

from .helpers import WAR, Table

PROFILES = {"ny": NY, "uk": UK, "standard": STANDARD}

# docs/rules.md "Settlement arithmetic": (initial result, npu, odds) / (war result, npu, odds).
# The odds of a wager that did not win are the posted odds ("2:1" for the NY war wager).
SPEC_TABLE: dict[tuple[str, str], tuple[tuple[str, int, str], tuple[str, int, str]]] = {
    ("ny", "win"): (("lose", -1, "1:1"), ("win", 2, "2:1")),
    ("ny", "tie"): (("push", 0, "1:1"), ("win", 3, "3:1")),
    ("ny", "lose"): (("lose", -1, "1:1"), ("lose", -1, "2:1")),
    ("uk", "win"): (("push", 0, "1:1"), ("win", 1, "1:1")),
    ("uk", "tie"): (("push", 0, "1:1"), ("win", 1, "1:1")),
    ("uk", "lose"): (("lose", -1, "1:1"), ("lose", -1, "1:1")),
    ("standard", "win"): (("push", 0, "1:1"), ("win", 1, "1:1")),
    ("standard", "tie"): (("win", 1, "1:1"), ("win", 1, "1:1")),
    ("standard", "lose"): (("lose", -1, "1:1"), ("lose", -1, "1:1")),
}
# docs/rules.md, profile table: net per unit on war win / war tie / war loss.
SPEC_WAR_NET: dict[str, dict[str, int]] = {
    "ny": {"win": 1, "tie": 3, "lose": -2},
    "uk": {"win": 1, "tie": 1, "lose": -2},
    "standard": {"win": 1, "tie": 2, "lose": -2},
}
# War cards against the dealer's 8 of diamonds.
WAR_CARD = {"win": "KH", "tie": "8H", "lose": "3H"}


def _war_round(rules: RulesProfile, war_outcome: str, amount: int) -> Table:
    t = Table.of(rules)
    t.open_shoe()
    t.bets({1: (amount, None, None)})
    t.cards(["9H", "9S"])
    t.put(1, WAR, amount)
    t.ok("WAR", "1")
    t.cards(["2H", "2D", "2S", WAR_CARD[war_outcome], "8D"])
    return t


def _triple(w: dict[str, Any]) -> tuple[str, int | float, str]:
    return (w["result"], w["net_per_unit"], w["odds"])


@pytest.mark.parametrize(
    ("profile", "war_outcome"),
    sorted(SPEC_TABLE),
    ids=[f"{p}-war_{o}" for p, o in sorted(SPEC_TABLE)],
)
def test_si5ii_war_settlement_matches_the_spec_table(profile: str, war_outcome: str) -> None:
    """§(i)(5)(ii), docs/rules.md: each profile's war accounting, wager by wager."""
    t = _war_round(PROFILES[profile], war_outcome, 2000)
    pos = t.position(1)
    assert pos["outcome"] == "tie"
    assert pos["decision"] == "war"
    assert pos["war_outcome"] == war_outcome
    initial, war = t.wager(1, "initial"), t.wager(1, "war")
    want_initial, want_war = SPEC_TABLE[(profile, war_outcome)]
    assert _triple(initial) == want_initial
    assert _triple(war) == want_war
    assert initial["net"] == 2000 * want_initial[1]
    assert war["net"] == 2000 * want_war[1]
    assert pos["net"] == 2000 * SPEC_WAR_NET[profile][war_outcome]
    assert t.record()["net"] == pos["net"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize(
    ("amount", "net"), [(2500, -1250), (2501, -1251), (1, -1), (0, 0), (999_999, -500_000)]
)
def test_si3i_surrender_returns_half_rounded_down(profile: str, amount: int, net: int) -> None:
    """§(i)(3)(i): half the initial wager returned, rounded down to the cent."""
    t = Table.of(PROFILES[profile])
    t.open_shoe()
    t.bets({1: (amount, None, None)})
    t.cards(["9H", "9S"])
    t.ok("SURRENDER", "1")
    w = t.wager(1, "initial")
    assert (w["result"], w["net_per_unit"], w["odds"]) == ("surrender", -0.5, "1:1")
    assert w["net"] == net
    assert w["net"] == -(amount - amount // 2)


def test_presence_only_board_settles_per_unit_only() -> None:
    """docs/rules.md: without chip values, amount and net are null and net_per_unit is known."""
    t = Table.of(NY, rfid=False)
    t.open_shoe()
    t.bets({1: (100, 100, None), 2: (100, None, None)})
    t.cards(["9H", "KH", "9S"])
    t.ok("SURRENDER", "1")
    p1, p2 = t.position(1), t.position(2)
    assert [(w["spot"], w["amount"], w["net_per_unit"], w["net"]) for w in p1["wagers"]] == [
        ("initial", None, -0.5, None),
        ("tie", None, 10, None),
    ]
    assert [(w["amount"], w["net_per_unit"], w["net"]) for w in p2["wagers"]] == [(None, 1, None)]
    assert p1["net"] is None
    assert t.record()["net"] is None


def test_record_shape_matches_mqtt_md() -> None:
    """docs/feed.md's example round: burn, 7H to P1, 7S to the dealer, surrender, tie wager won."""
    t = Table.of(NY)
    t.ok("SHUFFLED")
    t.ok("DEALER", "D-114")
    t.bets({1: (2500, 500, None)})
    t.ok("NO_MORE_BETS")
    t.cards(["9C", "7H", "7S"])
    t.ok("SURRENDER", "1")
    rec = t.record()
    assert set(rec) == {
        "round_id",
        "shoe_id",
        "dealer",
        "rules",
        "rules_overrides",
        "started",
        "ended",
        "void",
        "void_reason",
        "cards",
        "dealer_card",
        "dealer_war_card",
        "positions",
        "net",
        "alerts",
    }
    assert rec["cards"] == [
        {"n": 1, "card": "9C", "role": "burn", "position": None, "source": "shoe"},
        {"n": 2, "card": "7H", "role": "position", "position": 1, "source": "shoe"},
        {"n": 3, "card": "7S", "role": "dealer", "position": None, "source": "shoe"},
    ]
    assert (rec["dealer"], rec["rules"], rec["void"], rec["void_reason"]) == (
        "D-114",
        "ny",
        False,
        None,
    )
    assert (rec["dealer_card"], rec["dealer_war_card"]) == ("7S", None)
    assert rec["positions"] == [
        {
            "position": 1,
            "card": "7H",
            "outcome": "tie",
            "decision": "surrender",
            "war_card": None,
            "war_outcome": None,
            "wagers": [
                {
                    "spot": "initial",
                    "amount": 2500,
                    "odds": "1:1",
                    "result": "surrender",
                    "net_per_unit": -0.5,
                    "net": -1250,
                },
                {
                    "spot": "tie",
                    "amount": 500,
                    "odds": "10:1",
                    "result": "win",
                    "net_per_unit": 10,
                    "net": 5000,
                },
            ],
            "net": 3750,
        }
    ]
    assert rec["net"] == 3750
    assert rec["alerts"] == []
    assert rec["started"].endswith("Z")
    assert rec["ended"].endswith("Z")


def test_net_per_unit_is_an_int_when_whole() -> None:
    from fractions import Fraction

    assert npu_json(Fraction(3)) == 3
    assert type(npu_json(Fraction(3))) is int
    assert npu_json(Fraction(-1, 2)) == -0.5


@settings(max_examples=200)
@given(
    amount=st.integers(min_value=0, max_value=10**9),
    num=st.integers(min_value=-12, max_value=12),
    den=st.sampled_from([1, 2, 4]),
)
def test_wager_net_is_amount_times_npu_rounded_in_the_house_favour(
    amount: int, num: int, den: int
) -> None:
    from fractions import Fraction

    npu = Fraction(num, den)
    net = wager_net(amount, npu)
    assert net is not None
    exact = amount * npu
    assert net <= exact < net + 1
    assert wager_net(None, npu) is None
