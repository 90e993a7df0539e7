"""Following the event log by id when ids are taken before commit: every id is handed on once,
a gap is waited for (and the saved position stays below it) until it fills or times out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopengine.triggers import MAX_GAPS, LogFollower


def test_ids_in_order_are_handed_on_and_the_position_follows() -> None:
    follower = LogFollower(0, wait_s=60)
    assert follower.take([1, 2, 3], now=0) == [1, 2, 3]
    assert follower.position == 3


def test_an_id_committed_after_a_later_one_is_handed_on_when_it_appears() -> None:
    follower = LogFollower(0, wait_s=60)
    assert follower.take([1, 3, 4], now=0) == [1, 3, 4]
    assert follower.position == 1
    assert follower.take([3, 4], now=1) == []
    assert follower.take([2], now=2) == [2]
    assert follower.position == 4


def test_a_gap_older_than_the_wait_is_given_up() -> None:
    follower = LogFollower(10, wait_s=60)
    follower.take([12], now=0)
    assert follower.position == 10
    assert follower.take([], now=59.9) == []
    assert follower.position == 10
    assert follower.take([], now=60) == []
    assert follower.position == 12
    assert follower.take([11], now=61) == []


def test_a_jump_far_ahead_waits_for_at_most_max_gaps_ids() -> None:
    follower = LogFollower(0, wait_s=60)
    follower.take([10 * MAX_GAPS], now=0)
    assert len(follower.gaps) == MAX_GAPS
    assert follower.position == 9 * MAX_GAPS - 1


@given(st.permutations(list(range(1, 30))), st.integers(min_value=1, max_value=29))
def test_whatever_the_commit_order_each_id_is_handed_on_once(order: list[int], batch: int) -> None:
    follower = LogFollower(0, wait_s=1_000)
    committed: list[int] = []
    handed: list[int] = []
    for start in range(0, len(order), batch):
        committed.extend(order[start : start + batch])
        visible = [i for i in committed if i > follower.high or i in follower.gaps]
        handed.extend(follower.take(visible, now=start))
    assert sorted(handed) == list(range(1, 30))
    assert follower.position == 29
