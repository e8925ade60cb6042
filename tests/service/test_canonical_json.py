"""The records' canonical JSON (table_controller/feed/chain.py): the fast path writes the
bytes the ``rfc8785`` library, the reference, writes, or refuses what it refuses."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from table_controller.feed import chain
from table_controller.service import messages
from table_controller.service.journal import Journal
from table_controller.service.runner import TableRunner
from tests.service.journal_tables import config, session


class Kind(enum.IntEnum):
    ONE = 1


class Name(enum.StrEnum):
    WAR = "war"


# Any code point, lone surrogates and astral ones included (they sort apart in UTF-16).
_TEXT = st.one_of(
    st.text(max_size=8),
    st.text(st.characters(exclude_categories=()), max_size=8),
    st.text('aZ\x00\x1f\x7f"\\/\b\f\n\r\t\u2028\ue000\uffff\U00010000\U0001f600', max_size=8),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) - 2, max_value=2**53 + 2),
    st.integers(),
    st.floats(),
    # Where Python's float form and ECMAScript's part: whole numbers, 1e-4 and 1e16.
    st.sampled_from([1.0, -0.0, 0.5, -0.5, 1e-4, 9.999e-5, 1e16, 9999999999999998.0, 1e21]),
    st.sampled_from([5e-324, 0.1, 123456789012345.6, 2.0**53 + 0.5, float("nan")]),
    _TEXT,
    st.sampled_from([Kind.ONE, Name.WAR]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_TEXT, inner, max_size=4),
        st.dictionaries(st.one_of(_TEXT, st.integers(0, 3)), inner, max_size=3),
    ),
    max_leaves=20,
)


def _reference(value: Any) -> bytes | type[Exception]:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)
    except UnicodeError:  # the library's own sort of a key with a lone surrogate
        return rfc8785.CanonicalizationError


@given(_VALUES)
def test_the_canonical_form_is_the_reference_libraries_byte_for_byte(value: Any) -> None:
    expected = _reference(value)
    if isinstance(expected, bytes):
        assert chain.canonical(value) == expected
    else:
        with pytest.raises(expected):
            chain.canonical(value)


def test_a_record_with_a_lone_surrogate_in_a_key_cannot_be_hashed_and_says_why() -> None:
    # JSON's "\ud800" escape reads as one: the chain's own error, not the codec's.
    record = json.loads('{"round_id": 1, "\\ud800": 0}')
    with pytest.raises(chain.ChainError, match="cannot be canonicalised"):
        chain.record_hash(record)


def test_every_record_the_table_writes_takes_the_fast_path_and_hashes_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The records as they are sealed, before any JSON round trip could make them plain:
    # an enum in a record (a str subclass) takes the library's slower path.
    sealed: list[dict[str, Any]] = []

    def keep(record: dict[str, Any], prev_hash: str | None) -> dict[str, Any]:
        sealed.append(record := chain.seal(record, prev_hash))
        return record

    monkeypatch.setattr(messages, "seal", keep)
    path = tmp_path / "j.sqlite3"
    runner = TableRunner(config(path), Journal(path))
    try:
        for inp in session(30):
            runner.handle(inp)
        stored = [json.loads(m.payload) for m in runner.journal.last_messages("rounds", 1000)]
    finally:
        runner.journal.close()
    assert len(sealed) >= 25
    assert [r["hash"] for r in stored] == [r["hash"] for r in sealed][-len(stored) :]
    for record in sealed:
        body = {k: v for k, v in record.items() if k != chain.HASH}
        assert chain._plain(body), body
        assert chain.canonical(body) == rfc8785.dumps(body)
        assert chain.verifies(record)
