"""Charts drawn as SVG on the server: no script, no library, nothing to download.

A pit network has no internet, and a chart library would be one more thing to
vendor, audit and keep patched for a few bars and a line. The SVG scales with
its box (``viewBox``), takes its colours from the stylesheet (classes, not
inline colours, so the dim-pit palette applies) and carries a ``<title>`` and
``<desc>`` for screen readers; each chart sits beside a table of its figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final
from xml.sax.saxutils import escape

from markupsafe import Markup

WIDTH: Final = 640
HEIGHT: Final = 240
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40


def _frame(title: str, desc: str, body: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'preserveAspectRatio="xMidYMid meet" aria-label="{escape(title, {chr(34): "&quot;"})}">'
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>{''.join(body)}</svg>"
    )


def _scale(lo: float, hi: float) -> tuple[float, float]:
    if lo == hi:
        return (lo - 1, hi + 1)
    return (min(lo, 0.0), max(hi, 0.0))


def _y(value: float, lo: float, hi: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (hi - value) / (hi - lo)


def _axis(lo: float, hi: float, fmt: Callable[[float], str]) -> list[str]:
    zero = _y(0.0, lo, hi)
    out = [f'<line class="axis" x1="{LEFT}" y1="{zero:.1f}" x2="{WIDTH - RIGHT}" y2="{zero:.1f}"/>']
    for value in (lo, hi):
        y = _y(value, lo, hi)
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(fmt(value))}</text>"
        )
    return out


def bar_chart(
    title: str, bars: Sequence[tuple[str, float]], fmt: Callable[[float], str] = "{:g}".format
) -> Markup:
    """One bar per label; negative values hang below the zero line."""
    if not bars:
        return _frame(title, "no data yet", ['<text class="tick" x="50%" y="50%">no data</text>'])
    lo, hi = _scale(min(v for _, v in bars), max(v for _, v in bars))
    slot = (WIDTH - LEFT - RIGHT) / len(bars)
    body = _axis(lo, hi, fmt)
    label_every = max(1, len(bars) // 12)
    for i, (label, value) in enumerate(bars):
        x = LEFT + i * slot + slot * 0.15
        y0, y1 = sorted((_y(0.0, lo, hi), _y(value, lo, hi)))
        kind = "bar neg" if value < 0 else "bar"
        body.append(
            f'<rect class="{kind}" x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.7:.1f}" '
            f'height="{max(y1 - y0, 1):.1f}"><title>{escape(label)}: '
            f"{escape(fmt(value))}</title></rect>"
        )
        if i % label_every == 0:
            body.append(
                f'<text class="tick" x="{x + slot * 0.35:.1f}" y="{HEIGHT - BOTTOM + 18}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    desc = "; ".join(f"{label} {fmt(v)}" for label, v in bars)
    return _frame(title, desc, body)


def line_chart(
    title: str, points: Sequence[tuple[datetime, float]], fmt: Callable[[float], str]
) -> Markup:
    """A step line of a running figure over time (the players' net over the shift)."""
    if not points:
        return _frame(title, "no data yet", ['<text class="tick" x="50%" y="50%">no data</text>'])
    lo, hi = _scale(min(v for _, v in points), max(v for _, v in points))
    t0, t1 = points[0][0], points[-1][0]
    span = max((t1 - t0).total_seconds(), 1.0)

    def x(t: datetime) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (t - t0).total_seconds() / span

    path = " ".join(
        f"{'M' if i == 0 else 'L'}{x(t):.1f},{_y(v, lo, hi):.1f}" for i, (t, v) in enumerate(points)
    )
    body = [*_axis(lo, hi, fmt), f'<path class="line" d="{path}"/>']
    for t, anchor in ((t0, "start"), (t1, "end")):
        body.append(
            f'<text class="tick" x="{x(t):.1f}" y="{HEIGHT - BOTTOM + 18}" '
            f'text-anchor="{anchor}">{t.strftime("%H:%M")}</text>'
        )
    desc = f"from {fmt(points[0][1])} at {t0:%H:%M} to {fmt(points[-1][1])} at {t1:%H:%M} UTC"
    return _frame(title, desc, body)
