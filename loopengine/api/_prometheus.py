"""The daemon's Prometheus metrics: executions by loop and outcome, phase durations, fire
lateness and events matched (counted from the daemon's log lines and the engine's phases as they
happen), queue depth (read from the store at each scrape), and the LLM nodes' calls, tokens,
latency and health (read from the cluster's counters).

Each daemon has its own registry, so two apps in one process (tests) never share a counter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from itertools import accumulate
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from loopengine.store import PhaseResult

__all__ = ["DaemonMetrics"]

_PHASE_BUCKETS_S = (0.001, 0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)
_LATENESS_BUCKETS_S = (0.01, 0.05, 0.25, 1.0, 5.0, 30.0, 120.0, 600.0)


class _Nodes(Collector):
    """The LLM nodes' counters and health, read from the cluster at each scrape."""

    def __init__(self, llm: Callable[[], Any]) -> None:
        self.llm = llm

    def collect(self) -> Iterator[Metric]:
        runtime = self.llm()
        if runtime is None:
            return
        found = runtime.cluster
        calls = CounterMetricFamily("loopengine_llm_calls", "Calls to a node.", labels=["node"])
        failures = CounterMetricFamily(
            "loopengine_llm_failures", "Calls to a node that failed.", labels=["node"]
        )
        tokens = CounterMetricFamily(
            "loopengine_llm_tokens", "Tokens a node reported.", labels=["node", "kind"]
        )
        latency = HistogramMetricFamily(
            "loopengine_llm_latency_seconds", "Latency of calls to a node.", labels=["node"]
        )
        up = GaugeMetricFamily(
            "loopengine_llm_node_up",
            "1 when the node takes calls, 0 cooling down.",
            labels=["node"],
        )
        now = time.time()
        for node, stats in sorted(found.stats.items()):
            calls.add_metric([node], stats.calls)
            failures.add_metric([node], stats.failures)
            tokens.add_metric([node, "prompt"], stats.prompt_tokens)
            tokens.add_metric([node, "completion"], stats.completion_tokens)
            bounds = [*(str(b) for b in stats.bounds), "+Inf"]
            cumulative = list(accumulate(stats.buckets))
            latency.add_metric(
                [node], list(zip(bounds, cumulative, strict=True)), stats.latency_sum_s
            )
            up.add_metric([node], float(found.health[node].available(now)))
        yield from (calls, failures, tokens, latency, up)


class _Children:
    """A labelled metric's children, each looked up once (``labels`` takes a lock and checks its
    values on every call: two calls an execution)."""

    __slots__ = ("made", "metric")

    def __init__(self, metric: Counter | Histogram) -> None:
        self.metric = metric
        self.made: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self.made.get(values)
        if child is None:
            child = self.made[values] = self.metric.labels(*values)
        return child


class DaemonMetrics:
    """The instruments of one daemon; ``observe`` takes its log lines, ``phase`` the engine's
    phases, ``render`` writes the text format."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.executions = Counter(
            "loopengine_executions",
            "Jobs this daemon's workers ran to an end, by loop and outcome.",
            ["loop", "outcome"],
            registry=self.registry,
        )
        self.phases = Histogram(
            "loopengine_phase_duration_seconds",
            "How long each phase ran, by loop and phase.",
            ["loop", "phase"],
            buckets=_PHASE_BUCKETS_S,
            registry=self.registry,
        )
        self.lateness = Histogram(
            "loopengine_fire_lateness_seconds",
            "From when a job was due to when a worker started it, by loop.",
            ["loop"],
            buckets=_LATENESS_BUCKETS_S,
            registry=self.registry,
        )
        self.matched = Counter(
            "loopengine_events_matched",
            "Events that queued a job of a loop.",
            ["loop"],
            registry=self.registry,
        )
        self.queue = Gauge(
            "loopengine_queue_depth",
            "Jobs by status in the store's queue.",
            ["status"],
            registry=self.registry,
        )

        self._executions = _Children(self.executions)
        self._phases = _Children(self.phases)

    def watch(self, llm: Callable[[], Any]) -> None:
        """Report the LLM nodes of the runtime ``llm`` returns (None: no cluster)."""
        self.registry.register(_Nodes(llm))

    def observe(self, kind: str, fields: Mapping[str, Any]) -> None:
        """Count what a daemon log line says happened."""
        loop = str(fields.get("loop", ""))
        if kind == "end":
            self._executions(loop, str(fields.get("outcome"))).inc()
        elif kind == "start" and isinstance(late := fields.get("late_s"), int | float):
            self.lateness.labels(loop).observe(max(0.0, float(late)))
        elif kind == "fire" and "event" in fields:
            self.matched.labels(loop).inc()

    def phase(self, loop_id: str, record: PhaseResult) -> None:
        """Time a phase that ran (one skipped is not timed)."""
        if "skipped" not in record.data:
            duration = max(0.0, record.completed_at - record.started_at)
            self._phases(loop_id, record.phase).observe(duration)

    def render(self, depth: Mapping[str, int], accept: str | None = None) -> tuple[bytes, str]:
        """The metrics, with the queue's depth as just read, in the format the scraper's
        ``Accept`` header asks for (Prometheus text, or OpenMetrics); and its content type."""
        for status, count in depth.items():
            self.queue.labels(status).set(count)
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type
