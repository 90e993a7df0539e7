"""A node's counters: each call counted once, in the latency bucket it falls in."""

from __future__ import annotations

import pytest

from loopengine.llm import LATENCY_BUCKETS_S, NodeStats


def test_a_call_counts_its_tokens_and_latency() -> None:
    stats = NodeStats().after(0.3, failed=False, prompt_tokens=10, completion_tokens=5)
    assert (stats.calls, stats.failures, stats.prompt_tokens, stats.completion_tokens) == (
        1,
        0,
        10,
        5,
    )
    assert stats.latency_sum_s == pytest.approx(0.3)


def test_a_failure_is_a_call_and_a_failure() -> None:
    stats = NodeStats().after(1.0, failed=True)
    assert (stats.calls, stats.failures) == (1, 1)


@pytest.mark.parametrize(
    ("latency", "slot"),
    [(0.0, 0), (0.1, 0), (0.1001, 1), (60.0, 8), (120.0, 9), (121.0, 10), (1e9, 10)],
)
def test_a_call_falls_in_the_first_bucket_that_holds_it(latency: float, slot: int) -> None:
    stats = NodeStats().after(latency, failed=False)
    assert stats.buckets == tuple(int(i == slot) for i in range(len(LATENCY_BUCKETS_S) + 1))
