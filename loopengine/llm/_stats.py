"""What each node has done since the process started (calls, failures, tokens, latency), kept
by the cluster for ``GET /metrics``; pure."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

__all__ = ["LATENCY_BUCKETS_S", "NodeStats"]

LATENCY_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""Upper bounds of the latency histogram (seconds); a slower call counts in ``+Inf`` only."""


@dataclass(frozen=True, slots=True)
class NodeStats:
    """Counters of one node; ``buckets[i]`` counts calls at or under ``LATENCY_BUCKETS_S[i]``
    (not cumulative), the last one those over every bound."""

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_sum_s: float = 0.0
    buckets: tuple[int, ...] = (0,) * (len(LATENCY_BUCKETS_S) + 1)

    @property
    def bounds(self) -> tuple[float, ...]:
        """The buckets' upper bounds, ``+Inf`` left implicit."""
        return LATENCY_BUCKETS_S

    def after(
        self, latency_s: float, *, failed: bool, prompt_tokens: int = 0, completion_tokens: int = 0
    ) -> NodeStats:
        """These counters with one more call counted."""
        slot = bisect_left(LATENCY_BUCKETS_S, latency_s)
        buckets = tuple(n + (i == slot) for i, n in enumerate(self.buckets))
        return NodeStats(
            self.calls + 1,
            self.failures + failed,
            self.prompt_tokens + prompt_tokens,
            self.completion_tokens + completion_tokens,
            self.latency_sum_s + latency_s,
            buckets,
        )
