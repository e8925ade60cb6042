"""Hold beside theo, with its 95 % interval, per table over a shift (``docs/recorder.md``).

Theo is the house's expected win over the shift's rounds (:mod:`tally`: each
wager × its exact edge, the main wager at the table's observed share of ties
taken to war); the interval is theo ± z·σ, σ² the exact variance of the
house's win from the odds tool's variance per unit, z the normal quantile of
``LEVEL`` (the shift's many wagers make the win close to normal). A table
whose win lies outside it gets ``HOLD_VARIANCE`` for the table-games manager.
"""

from __future__ import annotations

import math
from datetime import datetime
from statistics import NormalDist
from typing import Any, Final

from table_controller.recorder.ratings.buckets import summaries
from table_controller.recorder.ratings.tally import Tally
from table_controller.recorder.store.backend import Backend

Json = dict[str, Any]
LEVEL: Final = 0.95
HOLD_VARIANCE: Final = "HOLD_VARIANCE"


def z_for(level: float = LEVEL) -> float:
    """The two-sided normal quantile of ``level`` (1.959... for 95 %)."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def hold_row(tally: Tally, *, level: float = LEVEL) -> Json:
    """Theo, theo hold, the interval of the win and the flag of one table's shift."""
    theo = tally.theo()
    sd = math.sqrt(tally.variance())
    half = z_for(level) * sd
    low, high = float(theo) - half, float(theo) + half
    win = -tally.players_net
    flagged = tally.rounds > 0 and tally.amounts_known and tally.priced and not low <= win <= high
    return {
        "theo": round(theo),
        "theo_hold": None if tally.handle == 0 else float(theo / tally.handle),
        "win_sd": round(sd, 2),
        "interval": {"level": level, "low": math.floor(low), "high": math.ceil(high)},
        "flags": [HOLD_VARIANCE] if flagged else [],
    }


async def holds(
    db: Backend,
    *,
    site: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[tuple[str, str], Json]:
    """Per table: its shift's theo and hold interval (rounds ended in [start, end))."""
    found = await summaries(db, site=site, start=start, end=end)
    return {key: hold_row(summary.tally) for key, summary in found.items()}
