"""The repository documents its own contracts: every link in it resolves inside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# [text](target) in Markdown; the target up to a space, a ')' or a '#'.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [ROOT / line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


def test_every_markdown_link_resolves_inside_the_repository() -> None:
    broken: dict[str, list[str]] = {}
    for doc in _tracked("*.md"):
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                broken.setdefault(str(doc.relative_to(ROOT)), []).append(target)
                continue
            resolved = (doc.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.setdefault(str(doc.relative_to(ROOT)), []).append(target)
    assert broken == {}


def test_nothing_points_beside_the_checkout() -> None:
    """Documents outside the repository are not there in a user's clone."""
    beside = "../" + "shared"  # spelled in two parts, so that this file does not match
    mentions = {
        str(f.relative_to(ROOT))
        for f in _tracked("*.md", "*.py", "*.toml", "*.yaml", "*.conf", "*.sh")
        if beside in f.read_text(encoding="utf-8", errors="replace")
    }
    assert mentions == set()


def test_the_link_pattern_finds_links() -> None:
    assert LINK.findall("see [rules](docs/rules.md#deal) and [x](https://example.org)") == [
        "docs/rules.md",
        "https://example.org",
    ]
