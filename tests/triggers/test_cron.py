"""Cron expressions: five fields, six with seconds first, nicknames."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopengine.triggers import cron_problem, has_seconds


@pytest.mark.parametrize("expression", ["0 2 * * *", "*/15 * * * 1-5", "30 0 2 * * *", "@daily"])
def test_valid_expressions(expression: str) -> None:
    assert cron_problem(expression) is None


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("0 2 * *", "has 4 fields"),
        ("0 0 2 * * * 2026", "has 7 fields"),
        ("61 * * * *", "minute '61' is not a number from 0 to 59"),
        ("0 25 * * *", "hour '25' is not a number from 0 to 23"),
        ("@sometimes", "has 1 fields"),
    ],
)
def test_invalid_expressions_say_why(expression: str, problem: str) -> None:
    assert problem in (cron_problem(expression) or "")


def test_six_fields_means_seconds_first() -> None:
    assert has_seconds("30 0 2 * * *")
    assert not has_seconds("0 2 * * *")
    assert cron_problem("0 0 2 * * *") is None
    assert cron_problem("0 0 2 * * 7x") is not None


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("10-5 * * * *", "minute '10-5' runs backwards"),
        ("* * * * fri-mon", "runs backwards"),
        ("*/0 * * * *", "has a step of 0"),
        ("* * * 13 *", "month '13' is not a number from 1 to 12 or a name (jan,"),
        ("* * 1W * *", "day of month '1W' is not a number from 1 to 31"),
        ("1,,2 * * * *", "minute '' is not a number, a name, '*', a range or a step"),
    ],
)
def test_a_wrong_field_is_named_with_what_it_may_hold(expression: str, problem: str) -> None:
    assert problem in (cron_problem(expression) or "")


@pytest.mark.parametrize(
    "expression",
    ["* * L * *", "0 9 * * 1#2", "0 0 ? * mon-fri", "5/15 * * JAN-mar *", "0-7/2 * * * 0-7"],
)
def test_last_day_nth_weekday_names_and_steps_are_accepted(expression: str) -> None:
    assert cron_problem(expression) is None


COMMON = st.sampled_from(["*", "1", "2", "5", "7"])
"""Words every field takes."""
ODD = st.sampled_from(
    ["?", "L", "0", "12", "23", "31", "59", "60", "jan", "MON", "fri", "sun", "W", "1W", "5L",
     "5#2", "2#6", "x", "", "-1", "²", "7-1", "*/0", "1/x"]
)  # fmt: skip


@st.composite
def expressions(draw: st.DrawFn) -> str:
    """Mostly fields every position takes (so that many expressions are valid and reach
    croniter), one in ten an odd word that only some positions take, or none."""

    def field() -> str:
        if draw(st.integers(0, 9)) == 0:
            return draw(ODD)
        text = draw(COMMON)
        if text != "*" and draw(st.booleans()):
            text += "-7"
        if draw(st.booleans()):
            text += "/" + draw(st.sampled_from(["1", "2", "15", "100"]))
        return text

    return " ".join(field() for _ in range(draw(st.sampled_from([5, 6]))))


@settings(max_examples=3000, deadline=None)
@given(expressions())
def test_what_is_accepted_croniter_can_walk(expression: str) -> None:
    """The check never accepts an expression the scheduler (croniter) would refuse."""
    from croniter import croniter

    if cron_problem(expression) is None:
        assert croniter.is_valid(expression, second_at_beginning=has_seconds(expression))
