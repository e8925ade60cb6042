"""Which topics the pit subscribes to, and which table a topic belongs to."""

from __future__ import annotations

import re
import string

from table_controller.feed.topics import DEFAULT_PREFIX
from table_controller.pit.errors import PitConfigError


def check_site(site: str | None) -> None:
    if site is not None and (not site or any(c in site for c in "/+#")):
        raise PitConfigError(f"--site {site!r}: one whole topic level, no '/', '+' or '#'")


def _levels(prefix: str) -> list[list[tuple[str, str | None]]]:
    """Each topic level of the prefix as (literal, field) pieces; fields are site and table."""
    if not prefix or prefix.startswith("/") or prefix.endswith("/") or "#" in prefix:
        raise PitConfigError(f"--prefix {prefix!r}: levels separated by '/', no '#'")
    levels: list[list[tuple[str, str | None]]] = []
    tables = 0
    for level in prefix.split("/"):
        try:
            pieces = [(literal, name) for literal, name, _, _ in string.Formatter().parse(level)]
        except ValueError as exc:
            raise PitConfigError(f"--prefix {prefix!r}: {exc}") from None
        for literal, name in pieces:
            if name is not None and name not in ("site", "table"):
                raise PitConfigError(f"--prefix {prefix!r}: only {{site}} and {{table}} allowed")
            if "+" in literal and level != "+":
                raise PitConfigError(f"--prefix {prefix!r}: '+' must be a whole level")
            tables += name == "table"
        levels.append(pieces)
    if tables != 1:
        raise PitConfigError(f"--prefix {prefix!r}: must contain {{table}} exactly once")
    return levels


def subscription_filter(prefix: str = DEFAULT_PREFIX, site: str | None = None) -> str:
    """The topic filter for every table under ``prefix`` (of ``site`` when given)."""
    check_site(site)
    out: list[str] = []
    for pieces in _levels(prefix):
        names = {name for _, name in pieces if name is not None}
        if "table" in names or ("site" in names and site is None):
            out.append("+")  # an MQTT wildcard is a whole level; the regex checks the rest
        else:
            out.append(
                "".join(lit + (site if name == "site" and site else "") for lit, name in pieces)
            )
    return "/".join(out) + "/#"


def topic_regex(prefix: str, site: str | None) -> re.Pattern[str]:
    parts: list[str] = []
    site_seen = False
    for pieces in _levels(prefix):
        if len(pieces) == 1 and pieces[0] == ("+", None):
            parts.append("[^/]+")
            continue
        level = ""
        for literal, name in pieces:
            level += re.escape(literal)
            if name == "table":
                level += "(?P<table>[^/]+)"
            elif name == "site" and site is not None:
                level += re.escape(site)
            elif name == "site" and not site_seen:
                level += "(?P<site>[^/]+)"
                site_seen = True
            elif name == "site":
                level += "(?P=site)"
        parts.append(level)
    return re.compile("/".join(parts) + "/(?P<kind>.+)")
