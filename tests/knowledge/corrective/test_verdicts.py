"""CRAG's verdict from the grades and two thresholds, and the thresholds' validation."""

from __future__ import annotations

import pytest

from loopengine.errors import ContractError
from loopengine.knowledge.corrective import Thresholds, Verdict, read_grade, verdict

THRESHOLDS = Thresholds(upper=0.7, lower=0.3)


def test_any_grade_above_upper_makes_the_retrieval_correct() -> None:
    assert verdict([0.0, 0.71, 0.2], THRESHOLDS) is Verdict.CORRECT


def test_a_best_grade_between_the_thresholds_makes_it_ambiguous() -> None:
    assert verdict([0.1, 0.5], THRESHOLDS) is Verdict.AMBIGUOUS


def test_a_grade_equal_to_upper_is_not_above_it() -> None:
    assert verdict([0.7], THRESHOLDS) is Verdict.AMBIGUOUS


def test_grades_at_or_below_lower_make_it_incorrect() -> None:
    assert verdict([0.3, 0.0], THRESHOLDS) is Verdict.INCORRECT


def test_no_grade_at_all_is_incorrect() -> None:
    assert verdict([], THRESHOLDS) is Verdict.INCORRECT


def test_an_unreadable_grade_is_never_evidence_even_at_lower_zero() -> None:
    assert verdict([read_grade("yes!")], Thresholds(upper=0.5, lower=0.0)) is Verdict.INCORRECT


@pytest.mark.parametrize(
    ("lower", "upper"), [(0.5, 0.5), (0.7, 0.3), (-0.1, 0.5), (0.2, 1.1), (float("nan"), 0.5)]
)
def test_thresholds_out_of_order_or_range_are_refused(lower: float, upper: float) -> None:
    with pytest.raises(ContractError, match="0 ≤ lower < upper ≤ 1"):
        Thresholds(upper=upper, lower=lower)
