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
        ("61 * * * *", "out of range or malformed"),
        ("0 25 * * *", "out of range or malformed"),
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
    "expression", ["0 0 * * sat-sun", "0 22-2 * * *", "0 9 * * fri#2", "0 0 15W * *", "* * L * *"]
)
def test_what_croniter_walks_is_accepted(expression: str) -> None:
    """Wrap-around ranges and Quartz's L, W and # are croniter's, and the scheduler walks them."""
    assert cron_problem(expression) is None


@pytest.mark.parametrize("expression", ["0 9 * * ?,1", "0 9 * * 1#2,sat"])
def test_what_croniter_cannot_walk_is_refused(expression: str) -> None:
    assert cron_problem(expression) is not None


PLAIN_ITEMS = st.sampled_from(
    ["*", "*", "*", "1", "1", "5", "5", "7", "0", "12", "23", "31", "59", "60", "99"]
)


@st.composite
def plain_expressions(draw: st.DrawFn) -> str:
    """Numbers, ``*``, ranges, steps and lists: what is known valid without croniter."""

    def item() -> str:
        text = draw(PLAIN_ITEMS)
        if text != "*" and draw(st.booleans()):
            text += "-" + draw(PLAIN_ITEMS.filter(lambda word: word != "*"))
        if draw(st.booleans()):
            text += "/" + draw(st.sampled_from(["0", "1", "2", "15", "100"]))
        return text

    def field() -> str:
        return ",".join(item() for _ in range(draw(st.integers(1, 3))))

    return " ".join(field() for _ in range(draw(st.sampled_from([5, 6]))))


def _fires_in_400_years(expression: str) -> bool:
    from croniter import CroniterBadDateError, croniter

    schedule = croniter(
        expression, 0, second_at_beginning=has_seconds(expression), max_years_between_matches=400
    )
    try:
        schedule.get_next(float)
    except CroniterBadDateError:
        return False
    return True


@settings(max_examples=2000, deadline=None)
@given(plain_expressions())
def test_the_check_agrees_with_croniter(expression: str) -> None:
    """Whether an expression is known valid without croniter or left to it, the verdict is
    croniter's: valid, and a fire within the 400 years after which the calendar repeats."""
    from croniter import croniter

    accepted = cron_problem(expression) is None
    seconds = has_seconds(expression)
    valid = croniter.is_valid(expression, second_at_beginning=seconds)
    assert accepted == (valid and _fires_in_400_years(expression))


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 31 2 *",
        "0 0 30 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 0 31 2 *",
        "0 0 31 feb *",
        "0 0 30-31 2 *",
    ],
)
def test_a_day_no_month_of_the_expression_has_never_fires(expression: str) -> None:
    assert cron_problem(expression) == (
        f"cron expression {expression!r} never fires: no date matches it (February has 29 days "
        "at most; April, June, September and November 30): change the day or the month"
    )


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 29 2 *",
        "0 0 31 2 mon",
        "0 0 31 1-2 *",
        "0 0 * 2 fri#5",
        "0 0 30,1 2 *",
        "0 0 29-31 2 *",
    ],
)
def test_rare_fires_are_fires(expression: str) -> None:
    """Every fourth February has a 29th; a weekday field fires on its own (Vixie's day-or); the
    fifth Friday of February comes up to 40 years apart."""
    assert cron_problem(expression) is None
