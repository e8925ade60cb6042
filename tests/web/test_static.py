"""What the pages are made of: nothing from the internet, colours readable in a dim pit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from table_controller.recorder.web import pages

WEB = Path(pages.__file__).parent
CSS = (WEB / "static" / "pit.css").read_text(encoding="utf-8")
# Text colour on the background it is shown on, as the stylesheet pairs them.
TEXT_PAIRS = [
    ("fg", "bg"),
    ("fg", "panel"),
    ("fg", "button-bg"),
    ("muted", "bg"),
    ("muted", "panel"),
    ("link", "bg"),
    ("link", "panel"),
    ("ok", "bg"),
    ("ok", "panel"),
    ("warn", "panel"),
    ("warn", "bg"),
    ("warn", "crit-bg"),
    ("warn", "held-bg"),
    ("crit-fg", "crit-bg"),
    ("crit-fg", "panel"),
    ("crit-fg", "bg"),
    ("focus", "bg"),
]
AAA = 7.0


def _palette() -> dict[str, str]:
    root = re.search(r":root\s*{([^}]*)}", CSS)
    assert root is not None
    return dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{6})", root.group(1)))


def _luminance(hex_colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two sRGB colours."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_contrast_computation_matches_known_ratios() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize(("fg", "bg"), TEXT_PAIRS, ids=[f"{f}-on-{b}" for f, b in TEXT_PAIRS])
def test_text_colours_have_a_contrast_of_at_least_7(fg: str, bg: str) -> None:
    colours = _palette()
    assert contrast(colours[fg], colours[bg]) >= AAA


def test_every_text_colour_is_a_palette_colour_that_is_tested() -> None:
    used = set(re.findall(r"(?<![-\w])color:\s*var\(--([a-z-]+)\)", CSS))
    literal = re.findall(r"(?<![-\w])color:\s*(#[0-9a-fA-F]+|rgb|hsl)", CSS)
    assert literal == []
    assert used <= {fg for fg, _ in TEXT_PAIRS}


def test_every_control_shows_where_the_keyboard_is() -> None:
    assert re.search(r":focus-visible[^{]*{[^}]*outline:\s*3px solid var\(--focus\)", CSS)
    assert "outline: none" not in CSS
    assert "outline:0" not in CSS.replace(" ", "")


def test_nothing_is_fetched_from_the_internet() -> None:
    files = [p for p in WEB.rglob("*") if p.suffix in {".html", ".css", ".js"}]
    assert len(files) >= 10
    offenders = [p.name for p in files if re.search(r"https?://", p.read_text(encoding="utf-8"))]
    assert offenders == []
    # ... and no protocol-relative links either.
    assert [p.name for p in files if re.search(r"""(src|href)=["']//""", p.read_text())] == []
