"""Cron expressions: five fields, six with seconds first, nicknames."""

from __future__ import annotations

import pytest

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
