"""What each profile's source lets a table override (docs/rules.md "Overrides cannot leave
the rule set"), and what the settlements of any profile must say.

``check_rule_set`` (also importable from ``rules``) raises ``RulesError`` naming the
dotted key and the clause of the source that a profile with overrides leaves:

- ``ny``: what 9 NYCRR §5324.22 fixes (cited as §(x)(n));
- ``uk``: what the UK Casino War rules outline says, in its own words;
- ``standard``: what the Casino War player guide says, in its own words;

and, for every profile, that each wager's result says what it nets: ``lose`` is the
wager collected (−1 per unit), ``push`` a stand-off (0), ``win`` more than nothing, at
the odds its ``odds`` name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Final

from table_controller.engine.errors import RulesError

if TYPE_CHECKING:
    from table_controller.engine.rules import RulesProfile, WagerSettlement


@dataclass(frozen=True, slots=True)
class Bound:
    """One limit a profile's source puts on its overrides: the key, the clause, the test."""

    key: str
    clause: str
    allowed: str
    holds: Callable[[RulesProfile], bool]


def _value(rules: RulesProfile, key: str) -> object:
    """The profile's field at the dotted ``key`` (``war.tie.initial.net_per_unit``)."""
    value: object = rules
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _number(rules: RulesProfile, key: str) -> Fraction:
    value = _value(rules, key)
    assert isinstance(value, int | Fraction)
    return Fraction(value)


def exactly(key: str, clause: str, net: int, why: str) -> Bound:
    """The net per unit at ``key`` is ``net`` and nothing else."""
    return Bound(key, clause, f"{net} ({why})", lambda r: _number(r, key) == net)


def at_least(key: str, clause: str, odds: int, why: str = "") -> Bound:
    """The net per unit (or the odds) at ``key`` is no less than ``odds``:1."""
    allowed = f"no less than {odds}:1" + (f" ({why})" if why else "")
    return Bound(key, clause, allowed, lambda r: _number(r, key) >= odds)


def flag(key: str, clause: str, value: bool, why: str) -> Bound:
    """The flag at ``key`` is ``value`` (``why`` says what that means)."""
    return Bound(key, clause, why, lambda r: _value(r, key) is value)


HALF: Final = Fraction(1, 2)


def half(clause: str) -> Bound:
    return Bound(
        "surrender_loss",
        clause,
        "exactly one half of the initial wager",
        lambda r: r.surrender_loss == HALF,
    )


# 9 NYCRR §5324.22.
COLLECTED: Final = "the initial wager collected when the player goes to war"
NY_BOUNDS: Final = (
    Bound("decks_min", "§(c)", "6..8 decks", lambda r: r.decks_min >= 6),
    Bound("decks_max", "§(c)", "6..8 decks", lambda r: r.decks_max <= 8),
    Bound("positions_max", "§(a)", "at most 7 positions", lambda r: r.positions_max <= 7),
    Bound("burn_new_shoe", "§(h)(1)", "exactly 1 burn card", lambda r: r.burn_new_shoe == 1),
    Bound(
        "burn_before_war", "§(i)(5)(i)", "exactly 3 burn cards", lambda r: r.burn_before_war == 3
    ),
    Bound(
        "burn_before_dealer_war",
        "§(i)(5)(i)",
        "no burn card before the dealer's war card",
        lambda r: r.burn_before_dealer_war == 0,
    ),
    half("§(i)(3)(i)"),
    at_least("initial_odds", "§(j)(1)", 1),
    at_least("tie_odds", "§(j)(2)", 10),
    # §(i)(5): "collect the full amount of the player's initial wager" at the war decision.
    flag("war.initial_collected_at_war_decision", "§(i)(5)", True, COLLECTED),
    exactly("war.win.initial.net_per_unit", "§(i)(5)", -1, COLLECTED),
    exactly("war.lose.initial.net_per_unit", "§(i)(5)", -1, COLLECTED),
    # §(i)(5)(ii)(c): on a war tie "the initial wager shall be returned".
    exactly("war.tie.initial.net_per_unit", "§(i)(5)(ii)(c)", 0, "the initial wager returned"),
    # §(i)(5)(ii)(a): a lower war card loses the war wager.
    exactly("war.lose.war.net_per_unit", "§(i)(5)(ii)(a)", -1, "the war wager lost"),
    at_least("war.win.war.net_per_unit", "§(j)(3)", 2),
    at_least("war.tie.war.net_per_unit", "§(j)(3)", 3),
    Bound(
        "no_more_bets_required",
        "§(h)(2)",
        "the deal after no more bets",
        lambda r: r.no_more_bets_required,
    ),
    Bound(
        "war_tie_wager_allowed",
        "§(i)(5)",
        "the tie wager on the war deal offered",
        lambda r: r.war_tie_wager_allowed,
    ),
)

# The UK outline, which numbers no clauses: its words.
UK_WAR_WON: Final = '("higher or equal ... win even money on the Go to War wager only")'
UK_WAR_LOST: Final = '("lower ... lose both the Go to War wager and the original wager")'
UK_ODDS: Final = '("Usual odds paid")'
UK_BOUNDS: Final = (
    half('("Surrender" and "lose half the value of their original wager")'),
    at_least("initial_odds", UK_ODDS, 1, "the original wager 1 to 1"),
    at_least("tie_odds", UK_ODDS, 10, "the tie wager 10 to 1"),
    flag(
        "war.initial_collected_at_war_decision",
        '("No bets may be added to, reduced or retracted after the first card has been dealt")',
        False,
        "the original wager standing until the war deal",
    ),
    exactly("war.win.initial.net_per_unit", UK_WAR_WON, 0, "the original wager stands off"),
    at_least("war.win.war.net_per_unit", UK_WAR_WON, 1, "even money"),
    exactly("war.tie.initial.net_per_unit", UK_WAR_WON, 0, "the original wager stands off"),
    at_least("war.tie.war.net_per_unit", UK_WAR_WON, 1, "even money"),
    exactly("war.lose.initial.net_per_unit", UK_WAR_LOST, -1, "the original wager lost"),
    exactly("war.lose.war.net_per_unit", UK_WAR_LOST, -1, "the war wager lost"),
)

# The player guide, by its headings and words.
GUIDE_HIGHER: Final = (
    '("Go to war": higher, "paid at the odds of 1 to 1 for your War Wager only", '
    'the Initial Wager "a stand-off")'
)
GUIDE_EQUAL: Final = '("Go to war": equal, "paid at the odds of 1 to 1 for both")'
GUIDE_LOWER: Final = '("Go to war": lower, "you will lose your Initial Wager and War Wager")'
STANDARD_BOUNDS: Final = (
    half('("Surrender": "forfeit half of your Initial Wager")'),
    at_least("initial_odds", '("How to play?": "paid at odds of 1 to 1")', 1),
    at_least("tie_odds", '("Tie": "paid at the odds of 10 to 1")', 10),
    flag(
        "war.initial_collected_at_war_decision",
        '("Go to war": the Initial Wager "a stand-off", or lost on a lower war card)',
        False,
        "the Initial Wager standing until the war deal",
    ),
    exactly("war.win.initial.net_per_unit", GUIDE_HIGHER, 0, "a stand-off"),
    at_least("war.win.war.net_per_unit", GUIDE_HIGHER, 1),
    at_least("war.tie.initial.net_per_unit", GUIDE_EQUAL, 1),
    at_least("war.tie.war.net_per_unit", GUIDE_EQUAL, 1),
    exactly("war.lose.initial.net_per_unit", GUIDE_LOWER, -1, "the Initial Wager lost"),
    exactly("war.lose.war.net_per_unit", GUIDE_LOWER, -1, "the War Wager lost"),
)

# By the profile's name (``RulesName``'s values).
RULE_SET_BOUNDS: Final[dict[str, tuple[Bound, ...]]] = {
    "ny": NY_BOUNDS,
    "uk": UK_BOUNDS,
    "standard": STANDARD_BOUNDS,
}
# Where each source says that a losing wager is collected and a winning one paid at its odds.
SETTLING: Final[dict[str, str]] = {
    "ny": "§(i)(5)(iii)",
    "uk": '("win even money", "lose their stake")',
    "standard": '("paid at the odds of", "a stand-off", "the dealer will collect")',
}


def _settles(s: WagerSettlement) -> tuple[str, str] | None:
    """Where a settlement's result and numbers disagree: the field and what it must be."""
    npu = s.net_per_unit
    if s.result == "lose" and npu != -1:
        return "net_per_unit", "'lose' (the wager collected) at -1 per unit"
    if s.result == "push" and npu != 0:
        return "net_per_unit", "'push' (a stand-off) at 0 per unit"
    if s.result == "win":
        if npu <= 0:
            return "net_per_unit", "'win' at more than 0 per unit"
        paid, to = (int(x) for x in s.odds.split(":"))
        if to == 0 or Fraction(paid, to) != npu:
            return "odds", f"odds of {npu.numerator}:{npu.denominator} for a win of {npu} per unit"
    return None


def check_rule_set(rules: RulesProfile) -> None:
    """A RulesError naming the key and the clause where overrides left the profile's source."""
    for bound in RULE_SET_BOUNDS.get(rules.name, ()):
        if not bound.holds(rules):
            raise RulesError(
                bound.key, f"{rules.source} {bound.clause} allows {bound.allowed} only"
            )
    clause = SETTLING.get(rules.name, "")
    for outcome in ("win", "tie", "lose"):
        for wager in ("initial", "war"):
            wrong = _settles(getattr(getattr(rules.war, outcome), wager))
            if wrong is not None:
                field, allowed = wrong
                raise RulesError(
                    f"war.{outcome}.{wager}.{field}",
                    f"{rules.source} {clause} allows {allowed} only",
                )
