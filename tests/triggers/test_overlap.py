"""What a fire does while its loop runs: start, queue, skip (with a reason) or replace."""

from __future__ import annotations

import pytest

from loopengine.triggers import Overlap, OverlapDecision, on_overlap

POLICIES = ["skip", "queue", "queue_one", "replace", "parallel"]


def decide(policy: str, running: int, queued: int, max_running: int = 1) -> OverlapDecision:
    return on_overlap(policy, running=running, queued=queued, max_running=max_running, max_queue=2)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_free_slot_with_nothing_queued_starts(policy: str) -> None:
    assert decide(policy, running=0, queued=0) == OverlapDecision(Overlap.START, None)


def test_skip_skips_while_one_runs() -> None:
    expected = OverlapDecision(Overlap.SKIP, "overlap: 1 running, on_overlap is skip")
    assert decide("skip", running=1, queued=0) == expected


def test_queue_queues_while_there_is_room() -> None:
    assert decide("queue", running=1, queued=1) == OverlapDecision(Overlap.QUEUE, None)


def test_queue_keeps_order_behind_what_is_queued_even_with_a_free_slot() -> None:
    assert decide("queue", running=0, queued=1).action is Overlap.QUEUE


def test_queue_skips_when_full() -> None:
    expected = OverlapDecision(Overlap.SKIP, "queue full (max_queue 2)")
    assert decide("queue", running=1, queued=2) == expected


def test_queue_one_queues_when_nothing_is_queued() -> None:
    assert decide("queue_one", running=1, queued=0) == OverlapDecision(Overlap.QUEUE, None)


def test_queue_one_coalesces_into_the_queued_one() -> None:
    expected = OverlapDecision(Overlap.SKIP, "coalesced: one already queued")
    assert decide("queue_one", running=1, queued=1) == expected


def test_replace_replaces_the_running_one() -> None:
    assert decide("replace", running=1, queued=0) == OverlapDecision(Overlap.REPLACE, None)


def test_parallel_starts_below_max() -> None:
    decision = decide("parallel", running=2, queued=1, max_running=3)
    assert decision == OverlapDecision(Overlap.START, None)


def test_parallel_queues_at_max() -> None:
    decision = decide("parallel", running=3, queued=1, max_running=3)
    assert decision == OverlapDecision(Overlap.QUEUE, None)


def test_parallel_skips_at_max_with_a_full_queue() -> None:
    expected = OverlapDecision(Overlap.SKIP, "queue full (max_queue 2)")
    assert decide("parallel", running=3, queued=2, max_running=3) == expected


@pytest.mark.parametrize("running", [0, 1])
def test_an_unknown_policy_is_refused(running: int) -> None:
    with pytest.raises(ValueError, match="unknown on_overlap 'drop'"):
        decide("drop", running=running, queued=0)
