"""docs/rules.md "Overrides cannot leave the rule set": a table's ``[profile]`` overrides
stay within what the profile's source allows, or the config fails at start naming the
dotted key and the clause; and the records of an overridden profile say so.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from table_controller.engine import TableSetup
from table_controller.engine.rules import NY, PROFILES, RulesName, check_rule_set
from table_controller.service.config import ConfigError, overrides_of, parse_config

from .helpers import Table


def _config(rules: str, profile: dict[str, Any], **table: Any) -> dict[str, Any]:
    return {
        "table": {"id": "war-07", "site": "main", "rules": rules, **table},
        "devices": {"shoe": "loop://", "console": "loop://", "sensors": "simusb://127.0.0.1:1"},
        "storage": {"path": "/tmp/journal.db"},
        "profile": profile,
    }


def _war(outcome: str, wager: str, **fields: Any) -> dict[str, Any]:
    """The override of one wager's settlement for one war outcome, as ``[profile.war]``."""
    return {"war": {outcome: {wager: fields}}}


# ------------------------------------------------------------ ny: 9 NYCRR §5324.22


@pytest.mark.parametrize(
    ("override", "key", "clause"),
    [
        ({"tie_odds": 5}, "profile.tie_odds", r"§\(j\)\(2\)"),
        ({"burn_new_shoe": 0}, "profile.burn_new_shoe", r"§\(h\)\(1\)"),
        ({"burn_before_war": 0}, "profile.burn_before_war", r"§\(i\)\(5\)\(i\)"),
        ({"decks_min": 1}, "profile.decks_min", r"§\(c\)"),
        ({"positions_max": 10}, "profile.positions_max", r"§\(a\)"),
        ({"surrender_loss": 1}, "profile.surrender_loss", r"§\(i\)\(3\)\(i\)"),
        (
            {"war": {"win": {"war": {"net_per_unit": 1, "odds": "1:1"}}}},
            r"profile.war.win.war.net_per_unit",
            r"§\(j\)\(3\)",
        ),
    ],
)
def test_case3_ny_overrides_that_leave_the_rule_set_fail_at_start(
    override: dict[str, Any], key: str, clause: str
) -> None:
    """docs/rules.md "Overrides cannot leave the rule set": the key and the clause are named."""
    with pytest.raises(ConfigError, match=rf"{key}.*{clause}"):
        parse_config(_config("ny", override))


@pytest.mark.parametrize(
    ("override", "key", "clause"),
    [
        # §(i)(5)(ii)(c): on a war tie "the initial wager shall be returned".
        (
            _war("tie", "initial", result="lose", net_per_unit=-1),
            "war.tie.initial.net_per_unit",
            r"§\(i\)\(5\)\(ii\)\(c\)",
        ),
        # §(i)(5)(ii)(a): a lower war card loses the war wager, one unit.
        (
            _war("lose", "war", net_per_unit=-3),
            "war.lose.war.net_per_unit",
            r"§\(i\)\(5\)\(ii\)\(a\)",
        ),
        # §(i)(5): the initial wager is collected when the player goes to war.
        (_war("win", "initial", net_per_unit=-2), "war.win.initial.net_per_unit", r"§\(i\)\(5\)"),
        (
            _war("lose", "initial", result="push", net_per_unit=0),
            "war.lose.initial.net_per_unit",
            r"§\(i\)\(5\)",
        ),
        (
            {"war": {"initial_collected_at_war_decision": False}},
            "war.initial_collected_at_war_decision",
            r"§\(i\)\(5\)",
        ),
        # §(i)(5)(iii): winning war wagers are paid at the posted odds, which say so.
        (_war("win", "war", odds="1:1"), "war.win.war.odds", r"§\(i\)\(5\)\(iii\)"),
        (_war("tie", "war", odds="2:1"), "war.tie.war.odds", r"§\(i\)\(5\)\(iii\)"),
    ],
)
def test_ny_overrides_keep_the_war_accounting_of_the_regulation(
    override: dict[str, Any], key: str, clause: str
) -> None:
    """§(i)(5), §(i)(5)(ii): the war accounting the regulation fixes, named by key and clause."""
    with pytest.raises(ConfigError, match=rf"profile\.{key}: 9 NYCRR §5324\.22 {clause}"):
        parse_config(_config("ny", override))


# ------------------------------------------------------------ uk and standard


UK_OUTLINE = "UK Casino War rules outline"
PLAYER_GUIDE = "Casino War player guide"


@pytest.mark.parametrize(
    ("rules", "override", "key", "words"),
    [
        ("uk", {"surrender_loss": 1}, "surrender_loss", "lose half the value"),
        ("standard", {"surrender_loss": 0}, "surrender_loss", "forfeit half"),
        ("uk", {"tie_odds": 9}, "tie_odds", "Usual odds paid"),
        ("standard", {"tie_odds": 2}, "tie_odds", "10 to 1"),
        # The UK outline: "higher or equal ... win even money on the Go to War wager only".
        ("uk", _war("tie", "war", result="lose", net_per_unit=-1), "war.tie.war", "or equal"),
        ("uk", _war("win", "initial", result="win", net_per_unit=1), "war.win.initial", "only"),
        # "lower ... lose both the Go to War wager and the original wager".
        ("uk", _war("lose", "initial", result="push", net_per_unit=0), "war.lose.initial", "both"),
        ("uk", _war("lose", "war", net_per_unit=-2), "war.lose.war", "both"),
        # The guide: "equal ... paid at the odds of 1 to 1 for both".
        ("standard", _war("tie", "initial", result="push", net_per_unit=0), "war.tie.initial", ""),
        ("standard", _war("win", "initial", result="lose", net_per_unit=-1), "war.win.initial", ""),
        ("standard", _war("win", "war", result="push", net_per_unit=0), "war.win.war", ""),
        ("standard", _war("lose", "war", net_per_unit=-2), "war.lose.war", ""),
    ],
)
def test_uk_and_standard_overrides_keep_their_sources_rules(
    rules: str, override: dict[str, Any], key: str, words: str
) -> None:
    """docs/rules.md "Overrides cannot leave the rule set": the surrender's half, the odds no
    lower than their source's and the war accounting as it describes it, named by key."""
    source = UK_OUTLINE if rules == "uk" else PLAYER_GUIDE
    dotted = key if "." not in key else f"{key}.net_per_unit"
    with pytest.raises(ConfigError, match=rf"profile\.{dotted}: {source} \(.*{words}.*\)"):
        parse_config(_config(rules, override))


@pytest.mark.parametrize("rules", ["uk", "standard"])
def test_uk_and_standard_keep_the_initial_wager_standing_until_the_war_deal(rules: str) -> None:
    """The outline and the guide settle the initial wager at the war deal, not at WAR."""
    with pytest.raises(ConfigError, match=r"profile\.war\.initial_collected_at_war_decision"):
        parse_config(_config(rules, {"war": {"initial_collected_at_war_decision": True}}))


# ------------------------------------------------------------ every profile


@pytest.mark.parametrize("rules", sorted(PROFILES))
@pytest.mark.parametrize(
    ("override", "key"),
    [
        # A result says what the wager nets: lose -1, push 0, win more than 0 ...
        (_war("lose", "war", result="push"), "war.lose.war.net_per_unit"),
        (_war("lose", "initial", result="win"), "war.lose.initial.net_per_unit"),
        # ... and a win's odds say what it is paid.
        (_war("win", "war", odds="5:1"), "war.win.war.odds"),
    ],
)
def test_a_settlement_says_what_it_nets_under_every_profile(
    rules: str, override: dict[str, Any], key: str
) -> None:
    """docs/rules.md "Rules profiles": `lose` nets −1, `push` 0, `win` its odds, above 0."""
    source = PROFILES[RulesName(rules)].source
    with pytest.raises(ConfigError, match=rf"profile\.{key}: {source} "):
        parse_config(_config(rules, override))


def test_the_shipped_profiles_keep_their_rule_sets() -> None:
    """Every shipped profile is within its own source's bounds, and says what it pays."""
    for rules in PROFILES.values():
        check_rule_set(rules)
        for outcome in ("win", "tie", "lose"):
            for wager in ("initial", "war"):
                s = getattr(getattr(rules.war, outcome), wager)
                if s.result == "win":
                    n, m = (int(x) for x in s.odds.split(":"))
                    assert Fraction(n, m) == s.net_per_unit


def test_case3_ny_may_raise_its_odds_and_uk_may_change_what_its_outline_leaves_open() -> None:
    """§(j): "no less than" the posted odds; the UK outline fixes no burn counts."""
    assert parse_config(_config("ny", {"tie_odds": 12})).rules.tie_odds == 12
    assert parse_config(_config("uk", {"burn_new_shoe": 0})).rules.burn_new_shoe == 0
    raised = parse_config(_config("ny", _war("tie", "war", net_per_unit=4, odds="4:1")))
    assert raised.rules.war.tie.war.net_per_unit == 4
    paid = parse_config(_config("standard", _war("win", "war", net_per_unit=2, odds="2:1")))
    assert paid.rules.war.win.war.net_per_unit == 2


def test_case3_records_carry_rules_overrides() -> None:
    """docs/rules.md: a record of an overridden profile lists the overrides (empty when none)."""
    cfg = parse_config(_config("ny", {"tie_odds": 12}))
    assert overrides_of(cfg) == (("tie_odds", 12),)
    t = Table(TableSetup(replace(NY, tie_odds=12), 6, 7, overrides=overrides_of(cfg)))
    t.open_shoe()
    t.bets({1: (1000, 100, None)})
    t.cards(["9H", "9C"])
    t.ok("SURRENDER", "1")
    assert t.record()["rules_overrides"] == {"tie_odds": 12}
    assert t.wager(1, "tie")["odds"] == "12:1"
    plain = Table.of(NY)
    plain.open_shoe()
    plain.bets({1: (1000, None, None)})
    plain.cards(["KH", "4D"])
    assert plain.record()["rules_overrides"] == {}
