"""Exact figures shown as percentages: four decimals, rounded half to even."""

from __future__ import annotations

from fractions import Fraction

PERCENT_DECIMALS = 4
_PERCENT_SCALE: int = 10**PERCENT_DECIMALS


def _percent_units(value: Fraction) -> int:
    """``value`` in units of 10**-PERCENT_DECIMALS percent, rounded half to even."""
    return round(value * 100 * _PERCENT_SCALE)


def percent(value: Fraction) -> float:
    """``value`` as a percentage rounded to four decimals (half to even)."""
    return float(Fraction(_percent_units(value), _PERCENT_SCALE))


def format_percent(value: Fraction) -> str:
    """``value`` as a percentage with exactly four decimals, e.g. ``2.3301``."""
    units = _percent_units(value)
    whole, frac = divmod(abs(units), _PERCENT_SCALE)
    return f"{'-' if units < 0 else ''}{whole}.{frac:0{PERCENT_DECIMALS}d}"
