"""Text cells of the CSV exports, kept text in a spreadsheet.

A dealer id is whatever was keyed at the console, and a table id whatever its config
says: a cell starting ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula
to a spreadsheet (``=HYPERLINK(…)`` sends the sheet's cells to a stranger's address). Such
a text cell gets a leading ``'``, which spreadsheets show as text and do not display.
Numbers are written as numbers, a negative one included.
"""

from __future__ import annotations

from typing import Final

_FORMULA: Final = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """``value`` as a CSV cell a spreadsheet cannot take for a formula."""
    return "'" + value if value.startswith(_FORMULA) else value
