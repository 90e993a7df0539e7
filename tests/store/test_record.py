"""Instants are written as ISO 8601 UTC text with milliseconds, exactly as ``datetime`` writes
them, whichever second the call before wrote."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from loopengine.store import iso


def _datetime_iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")


@given(st.lists(st.floats(min_value=0, max_value=4e9), min_size=1, max_size=5))
def test_an_instant_is_written_as_datetime_writes_it(moments: list[float]) -> None:
    assert [iso(moment) for moment in moments] == [_datetime_iso(m) for m in moments]


def test_microseconds_that_round_up_carry_into_the_next_second() -> None:
    assert iso(1795776133.9999996) == "2026-11-27T10:42:14.000+00:00"
    assert iso(1795776133.9999996) == _datetime_iso(1795776133.9999996)


def test_no_instant_is_none() -> None:
    assert iso(None) is None
