"""The daemon's metrics: what its log lines and the engine's phases say happened, the queue as
read at the scrape, the LLM nodes' counters, in Prometheus text format."""

from __future__ import annotations

import io
from dataclasses import dataclass

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from loopengine.api._prometheus import DaemonMetrics
from loopengine.contract import Cluster as ClusterConfig
from loopengine.contract import Node
from loopengine.daemon._log import DaemonLog
from loopengine.errors import LLMError
from loopengine.llm import Cluster
from loopengine.store import PhaseResult

DEPTH = {"queued": 2, "running": 1}


def _samples(metrics: DaemonMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render(DEPTH)[0].decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _logged(metrics: DaemonMetrics, kind: str, **fields: object) -> None:
    log = DaemonLog(io.StringIO())
    log.observers.append(metrics.observe)
    log.line(kind, **fields)


def test_an_execution_that_ended_counts_by_loop_and_outcome() -> None:
    metrics = DaemonMetrics()
    _logged(metrics, "end", loop="seo", job="j", execution="e", outcome="completed")
    _logged(metrics, "end", loop="seo", job="k", execution="f", outcome="completed")
    labels = (("loop", "seo"), ("outcome", "completed"))
    assert _samples(metrics)[("loopengine_executions_total", labels)] == 2


def test_a_start_observes_how_late_the_job_started() -> None:
    metrics = DaemonMetrics()
    _logged(metrics, "start", loop="seo", job="j", trigger="cron", late_s=0.3)
    samples = _samples(metrics)
    assert samples[("loopengine_fire_lateness_seconds_count", (("loop", "seo"),))] == 1
    assert samples[("loopengine_fire_lateness_seconds_sum", (("loop", "seo"),))] == 0.3


def test_only_a_fire_from_an_event_counts_as_matched() -> None:
    metrics = DaemonMetrics()
    _logged(metrics, "fire", loop="seo", trigger="t", event="seo.page.updated", job="j")
    _logged(metrics, "fire", loop="seo", trigger="cron", job="k")
    assert _samples(metrics)[("loopengine_events_matched_total", (("loop", "seo"),))] == 1


def test_a_phase_that_ran_is_timed_and_one_skipped_is_not() -> None:
    metrics = DaemonMetrics()
    metrics.phase("seo", PhaseResult("detect", 10.0, 10.25, True))
    metrics.phase("seo", PhaseResult("act", 11.0, 11.0, True, {"skipped": "no action"}))
    samples = _samples(metrics)
    detect = (("loop", "seo"), ("phase", "detect"))
    assert samples[("loopengine_phase_duration_seconds_sum", detect)] == 0.25
    assert ("loopengine_phase_duration_seconds_count", (("loop", "seo"), ("phase", "act"))) not in (
        samples
    )


def test_the_queue_depth_is_the_one_read_at_the_scrape() -> None:
    samples = _samples(DaemonMetrics())
    assert samples[("loopengine_queue_depth", (("status", "queued"),))] == 2
    assert samples[("loopengine_queue_depth", (("status", "running"),))] == 1


@dataclass
class _WithCluster:
    cluster: Cluster


def test_each_node_reports_its_calls_tokens_latency_and_health() -> None:
    node = Node(base_url="http://127.0.0.1:9/v1", model="m")
    cluster = Cluster(ClusterConfig(nodes={"OL1": node, "M1": node}), {})
    cluster.stats["OL1"] = cluster.stats["OL1"].after(
        0.4, failed=False, prompt_tokens=7, completion_tokens=3
    )
    for _ in range(3):
        cluster.failed("M1", LLMError("refused", status_code=404))
    metrics = DaemonMetrics()
    metrics.watch(lambda: _WithCluster(cluster))
    samples = _samples(metrics)
    assert samples[("loopengine_llm_calls_total", (("node", "OL1"),))] == 1
    assert samples[("loopengine_llm_tokens_total", (("kind", "prompt"), ("node", "OL1")))] == 7
    assert samples[("loopengine_llm_latency_seconds_bucket", (("le", "0.5"), ("node", "OL1")))] == 1
    assert (
        samples[("loopengine_llm_latency_seconds_bucket", (("le", "0.25"), ("node", "OL1")))] == 0
    )
    assert samples[("loopengine_llm_node_up", (("node", "OL1"),))] == 1
    assert samples[("loopengine_llm_node_up", (("node", "M1"),))] == 0
    anyio.run(cluster.aclose)


def test_without_a_cluster_no_node_is_reported() -> None:
    metrics = DaemonMetrics()
    metrics.watch(lambda: None)
    assert not [key for key in _samples(metrics) if key[0].startswith("loopengine_llm")]


@pytest.mark.parametrize("late", ["soon", None])
def test_a_start_line_without_a_lateness_observes_nothing(late: object) -> None:
    metrics = DaemonMetrics()
    _logged(metrics, "start", loop="seo", late_s=late)
    assert ("loopengine_fire_lateness_seconds_count", (("loop", "seo"),)) not in _samples(metrics)


def test_an_openmetrics_scraper_gets_openmetrics() -> None:
    body, content_type = DaemonMetrics().render(DEPTH, "application/openmetrics-text")
    assert content_type.startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")
