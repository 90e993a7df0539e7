"""Threshold triggers: fire on entering firing only, with for, hysteresis and keep_firing_for."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopengine.triggers import ThresholdRule, ThresholdState, evaluate

ABOVE_90 = ThresholdRule(">", 90)
EVERY = 10.0


def run(rule: ThresholdRule, *values: float | None) -> list[tuple[ThresholdState, bool]]:
    """Evaluate ``values`` one every ``EVERY`` seconds from a first evaluation ever."""
    steps: list[tuple[ThresholdState, bool]] = []
    state = None
    for i, value in enumerate(values):
        state, fired = evaluate(rule, state, value, i * EVERY)
        steps.append((state, fired))
    return steps


def fires(rule: ThresholdRule, *values: float | None) -> list[bool]:
    return [fired for _, fired in run(rule, *values)]


def last(rule: ThresholdRule, *values: float | None) -> tuple[ThresholdState, bool]:
    return run(rule, *values)[-1]


def states(rule: ThresholdRule, *values: float | None) -> list[str]:
    return [state.state for state, _ in run(rule, *values)]


def test_two_points_above_the_value_fire_once() -> None:
    assert fires(ABOVE_90, 50, 95, 96) == [False, True, False]


def test_below_clear_value_then_above_again_fires_again() -> None:
    rule = ThresholdRule(">", 90, clear_value=80)
    assert fires(rule, 50, 95, 75, 95) == [False, True, False, True]


def test_between_value_and_clear_value_does_not_rearm() -> None:
    rule = ThresholdRule(">", 90, clear_value=80)
    assert fires(rule, 50, 95, 85, 95) == [False, True, False, False]


def test_without_clear_value_any_point_short_of_the_value_rearms() -> None:
    assert fires(ABOVE_90, 50, 95, 85, 95) == [False, True, False, True]


def test_hysteresis_of_a_below_rule_clears_above_clear_value() -> None:
    rule = ThresholdRule("<", 10, clear_value=20)
    assert fires(rule, 50, 5, 15, 5, 25, 5) == [False, True, False, False, False, True]


@pytest.mark.parametrize("operator", ["==", "!="])
def test_clear_value_is_ignored_by_equality_operators(operator: str) -> None:
    rule = ThresholdRule(operator, 0, clear_value=100)
    holding, failing = (0, 1) if operator == "==" else (1, 0)
    assert fires(rule, failing, holding, failing, holding) == [False, True, False, True]


def test_for_is_pending_until_it_has_held_that_long() -> None:
    rule = ThresholdRule(">", 90, for_s=2 * EVERY)
    assert states(rule, 50, 95, 95, 95) == ["inactive", "pending", "pending", "firing"]


def test_for_fires_once_it_has_held_that_long() -> None:
    rule = ThresholdRule(">", 90, for_s=2 * EVERY)
    assert fires(rule, 50, 95, 95, 95, 95) == [False, False, False, True, False]


def test_pending_interrupted_starts_over() -> None:
    rule = ThresholdRule(">", 90, for_s=2 * EVERY)
    assert fires(rule, 50, 95, 95, 50, 95, 95, 95) == [False] * 6 + [True]


def test_pending_interrupted_is_inactive() -> None:
    rule = ThresholdRule(">", 90, for_s=2 * EVERY)
    assert states(rule, 50, 95, 50) == ["inactive", "pending", "inactive"]


def test_keep_firing_for_stays_firing_after_the_condition_clears() -> None:
    rule = ThresholdRule(">", 90, keep_firing_for_s=2 * EVERY)
    expected = ["inactive", "firing", "firing", "firing", "inactive"]
    assert states(rule, 50, 95, 50, 50, 50) == expected


def test_keep_firing_for_starts_over_when_the_condition_returns() -> None:
    rule = ThresholdRule(">", 90, keep_firing_for_s=2 * EVERY)
    expected = ["inactive", "firing", "firing", "firing", "firing", "firing", "inactive"]
    assert states(rule, 50, 95, 50, 95, 50, 50, 50) == expected


def test_keep_firing_for_records_when_the_condition_cleared() -> None:
    rule = ThresholdRule(">", 90, keep_firing_for_s=2 * EVERY)
    assert last(rule, 50, 95, 50)[0].cleared_at == 2 * EVERY


def test_keep_firing_for_does_not_fire_again_while_it_holds_on() -> None:
    rule = ThresholdRule(">", 90, keep_firing_for_s=2 * EVERY)
    assert fires(rule, 50, 95, 50, 95) == [False, True, False, False]


def test_already_true_at_start_does_not_fire() -> None:
    assert fires(ABOVE_90, 95, 95) == [False, False]


def test_already_true_at_start_is_disarmed() -> None:
    state, _ = last(ABOVE_90, 95)
    assert (state.state, state.armed) == ("inactive", False)


def test_already_true_at_start_fires_after_it_clears() -> None:
    assert fires(ABOVE_90, 95, 50, 95) == [False, False, True]


def test_fire_on_start_fires_at_once() -> None:
    assert fires(ThresholdRule(">", 90, fire_on_start=True), 95) == [True]


def test_fire_on_start_with_for_is_pending_first() -> None:
    rule = ThresholdRule(">", 90, for_s=EVERY, fire_on_start=True)
    assert states(rule, 95, 95) == ["pending", "firing"]


def test_missing_data_held_keeps_the_state() -> None:
    (firing, _), (held, fired) = run(ABOVE_90, 50, 95, None)[1:]
    assert (held, fired) == (firing, False)


def test_no_data_at_start_arms_it_so_the_first_value_above_fires() -> None:
    assert fires(ABOVE_90, None, 95, 96) == [False, True, False]


def test_missing_data_reset_goes_inactive_and_armed() -> None:
    rule = ThresholdRule(">", 90, on_missing="reset")
    state, fired = last(rule, 50, 95, None)
    assert (state.state, state.armed, fired) == ("inactive", True, False)


def test_missing_data_reset_lets_it_fire_again() -> None:
    rule = ThresholdRule(">", 90, on_missing="reset")
    assert fires(rule, 50, 95, None, 95) == [False, True, False, True]


@pytest.mark.parametrize(
    ("operator", "holding", "failing"),
    [(">", 91, 90), (">=", 90, 89), ("<", 89, 90), ("<=", 90, 91), ("==", 90, 91), ("!=", 91, 90)],
)
def test_each_operator_fires_when_it_starts_to_hold(
    operator: str, holding: float, failing: float
) -> None:
    assert fires(ThresholdRule(operator, 90), failing, holding) == [False, True]


def test_the_state_round_trips_through_json() -> None:
    state = ThresholdState("firing", 12.5, 95.0, armed=True, cleared_at=20.0)
    assert ThresholdState.from_dict(json.loads(json.dumps(state.as_dict()))) == state


def test_a_persisted_state_resumes_where_it_was() -> None:
    rule = ThresholdRule(">", 90, for_s=60)
    persisted = ThresholdState("pending", 0.0, 95.0).as_dict()
    assert evaluate(rule, ThresholdState.from_dict(persisted), 96, 60.0)[1]


def test_an_unknown_operator_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown operator '=>'"):
        ThresholdRule("=>", 90)


def test_an_unknown_on_missing_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown on_missing 'zero'"):
        ThresholdRule(">", 90, on_missing="zero")


def test_an_unknown_state_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown threshold state 'alerting'"):
        ThresholdState.from_dict({"state": "alerting", "since": 0, "value": None})


RULES = st.builds(
    ThresholdRule,
    operator=st.sampled_from([">", "<", ">=", "<=", "==", "!="]),
    value=st.integers(0, 4).map(float),
    for_s=st.sampled_from([0.0, 1.0, 5.0]),
    keep_firing_for_s=st.sampled_from([0.0, 1.0, 5.0]),
    clear_value=st.none() | st.integers(0, 4).map(float),
    fire_on_start=st.booleans(),
    on_missing=st.sampled_from(["hold", "reset"]),
)
POINTS = st.lists(
    st.tuples(st.none() | st.integers(0, 4).map(float), st.sampled_from([0.5, 1.0, 3.0])),
    max_size=30,
)


@given(RULES, POINTS)
def test_fires_exactly_on_entering_firing_and_never_twice_in_a_row(
    rule: ThresholdRule, points: list[tuple[float | None, float]]
) -> None:
    state: ThresholdState | None = None
    now, fired_before = 0.0, False
    for value, elapsed in points:
        now += elapsed
        previous = None if state is None else state.state
        state, fired = evaluate(rule, state, value, now)
        assert fired == (state.state == "firing" and previous != "firing")
        assert not (fired and fired_before)
        fired_before = fired
