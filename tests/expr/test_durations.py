"""Durations as authors write them."""

from __future__ import annotations

import pytest

from loopengine.expr import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("2d", 172800), ("1.5h", 5400)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "5 minutes", "h", "-5s"])
def test_invalid_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="write a number and a unit"):
        parse_duration(text)
