"""Catch-up after downtime: what runs, why each other missed slot does not; keyed jitter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopengine.contract import Catchup
from loopengine.triggers import CatchUp, catch_up, jittered

NOW = 10_000.0
MISSED = [9_000.0, 9_600.0, 9_700.0, 9_800.0, 9_900.0]
"""Five missed slots; with a window of 500 s the first one is too old."""

TOO_OLD = (9_000.0, "missed: older than the catch-up window")


def decide(policy: str, max_catchup: int = 2, missed: list[float] = MISSED) -> CatchUp:
    return catch_up(missed, policy=policy, window=500.0, max_catchup=max_catchup, now=NOW)


def test_skip_runs_nothing() -> None:
    reason = "missed: catchup is skip"
    assert decide("skip") == CatchUp(
        run=(),
        not_run=(TOO_OLD, *((slot, reason) for slot in MISSED[1:])),
    )


def test_latest_runs_the_most_recent_and_coalesces_the_rest() -> None:
    reason = "coalesced: catchup is latest"
    assert decide("latest") == CatchUp(
        run=(9_900.0,),
        not_run=(TOO_OLD, *((slot, reason) for slot in MISSED[1:4])),
    )


def test_all_runs_the_most_recent_max_catchup_oldest_first() -> None:
    reason = "coalesced: over max_catchup (2)"
    assert decide("all") == CatchUp(
        run=(9_800.0, 9_900.0),
        not_run=(TOO_OLD, (9_600.0, reason), (9_700.0, reason)),
    )


def test_all_runs_every_slot_in_the_window_under_max_catchup() -> None:
    assert decide("all", max_catchup=10).run == tuple(MISSED[1:])


def test_all_with_max_catchup_zero_runs_nothing() -> None:
    assert decide("all", max_catchup=0).run == ()


def test_a_slot_exactly_one_window_old_still_counts() -> None:
    assert decide("all", missed=[9_500.0]).run == (9_500.0,)


def test_nothing_missed_decides_nothing() -> None:
    assert decide("latest", missed=[]) == CatchUp(run=(), not_run=())


def test_policies_may_be_the_contract_enum() -> None:
    assert decide(Catchup.ALL) == decide("all")


def test_an_unknown_policy_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown catchup 'newest'"):
        decide("newest")


SLOTS = st.lists(st.floats(0, NOW), max_size=30).map(sorted)


@given(
    SLOTS,
    st.sampled_from(["skip", "latest", "all"]),
    st.floats(0, 2 * NOW),
    st.integers(0, 40),
)
def test_every_missed_slot_is_decided_exactly_once_and_in_order(
    missed: list[float], policy: str, window: float, max_catchup: int
) -> None:
    decision = catch_up(missed, policy=policy, window=window, max_catchup=max_catchup, now=NOW)
    not_run = [slot for slot, _ in decision.not_run]
    assert sorted([*decision.run, *not_run]) == missed
    assert list(decision.run) == sorted(decision.run)
    assert not_run == sorted(not_run)
    assert len(decision.run) <= {"skip": 0, "latest": 1, "all": max_catchup}[policy]
    assert all(slot >= NOW - window for slot in decision.run)


def test_zero_jitter_leaves_the_slot_alone() -> None:
    assert jittered(1_800_000_000.0, 0.0, "loop/cron/1800000000.0") == 1_800_000_000.0


def test_jitter_depends_only_on_the_key() -> None:
    first = jittered(1_800_000_000.0, 30.0, "loop/cron/1800000000.0")
    assert jittered(1_800_000_000.0, 30.0, "loop/cron/1800000000.0") == first
    assert jittered(1_800_000_000.0, 30.0, "loop/cron/1800000060.0") != first


@given(st.text(), st.floats(1e-9, 3600))
def test_jitter_stays_within_zero_and_jitter_s(key: str, jitter_s: float) -> None:
    assert 0 <= jittered(0.0, jitter_s, key) < jitter_s
