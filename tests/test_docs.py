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


# A Markdown file named in prose, a comment or a docstring: ``docs/rules.md``, ``README.md``.
NAMED_DOC = re.compile(r"(?<![\w./-])([\w./-]*[\w-]\.md)\b")


def test_every_document_a_file_names_is_in_the_repository() -> None:
    """A reader of a clone can open every document the code and docs refer to."""
    docs = {str(f.relative_to(ROOT)) for f in _tracked("*.md")}
    missing: dict[str, set[str]] = {}
    for f in _tracked("*.md", "*.py", "*.toml", "*.yaml", "*.conf", "*.sh", "*.service"):
        for named in NAMED_DOC.findall(f.read_text(encoding="utf-8", errors="replace")):
            beside = (f.parent / named).resolve()
            if beside.is_relative_to(ROOT) and beside.is_file():
                continue  # relative to the file that names it
            path = named.lstrip("./")
            if not any(
                path == doc or path.endswith("/" + doc) or doc.endswith("/" + path) for doc in docs
            ):
                missing.setdefault(str(f.relative_to(ROOT)), set()).add(named)
    assert missing == {}


def test_the_named_document_pattern_finds_names() -> None:
    text = "see docs/rules.md, (README.md) and ``deploy/README.md``; not docs.mdx"
    assert NAMED_DOC.findall(text) == ["docs/rules.md", "README.md", "deploy/README.md"]


def test_the_link_pattern_finds_links() -> None:
    assert LINK.findall("see [rules](docs/rules.md#deal) and [x](https://example.org)") == [
        "docs/rules.md",
        "https://example.org",
    ]
