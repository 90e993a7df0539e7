"""``loopengine daemon`` with traces: a W3C ``traceparent`` sent with a trigger, an event or a
webhook delivery is kept with the job (the event), so its execution's span continues the
sender's trace in the daemon that runs it, as an event a loop emits continues the emitter's;
spans are exported by OTLP/HTTP to a collector on 127.0.0.1, those still
held when the daemon stops included; a collector nobody answers at fails nothing."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import httpx
import pytest

from tests.daemon.conftest import BY_HAND, Daemon, Workspace
from tests.daemon.test_event_chain import CONSUMER, PRODUCER
from tests.otlp import Collector, ReceivedSpan, collecting
from tests.test_cli_traces import _closed_port

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
SENT = {"traceparent": TRACEPARENT}
HOOKED = """\
id: hooked
trigger: {type: webhook, config: {path: deploys}}
decide: {decision_tree: [], fallback_action: log_only}
"""


def _start(workspace: Workspace, endpoint: str, delay_ms: int = 50) -> tuple[Daemon, str]:
    """A daemon on ``by_hand``, ``hooked`` and the event chain ``cleaner`` → ``reporter``,
    exporting to ``endpoint`` every ``delay_ms``;
    it and its API's URL."""
    (workspace.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    (workspace.root / "loops" / "hooked.yaml").write_text(HOOKED)
    (workspace.root / "loops" / "cleaner.yaml").write_text(PRODUCER)
    (workspace.root / "loops" / "reporter.yaml").write_text(CONSUMER)
    (workspace.root / "loopengine.yaml").write_text(
        f"daemon: {{port: 0}}\ntracing: {{otlp_endpoint: '{endpoint}'}}\n"
    )
    for name in [name for name in workspace.env if name.startswith("OTEL_")]:
        del workspace.env[name]
    workspace.env["OTEL_BSP_SCHEDULE_DELAY"] = str(delay_ms)
    daemon = workspace.start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    return daemon, str(ready["api"])


def _executed(daemon: Daemon, collector: Collector, name: str) -> ReceivedSpan:
    """The one span of ``name`` the collector received, once it has."""
    found = daemon.wait_until(lambda: collector.named(name), f"no span {name!r} exported")
    [span] = found
    return span


@pytest.fixture
def collector() -> Iterator[Collector]:
    with collecting() as running:
        yield running


def _sent(api: str, path: str, body: object, headers: dict[str, str] = SENT) -> None:
    response = httpx.post(f"{api}{path}", json=body, headers=headers, timeout=10)
    assert response.status_code == 202, response.text


@pytest.mark.parametrize(
    ("path", "body", "loop_id"),
    [
        ("/loops/by_hand/trigger", {}, "by_hand"),
        ("/hooks/deploys", {"v": 1}, "hooked"),
        ("/events", {"name": "disk.cleaned", "data": {"freed": 50}}, "reporter"),
    ],
)
def test_a_request_with_a_traceparent_runs_its_execution_in_the_senders_trace(
    workspace: Workspace, collector: Collector, path: str, body: object, loop_id: str
) -> None:
    daemon, api = _start(workspace, collector.endpoint)
    _sent(api, path, body)
    execution = _executed(daemon, collector, f"execution {loop_id}")
    assert (execution.trace_id, execution.parent_span_id) == (TRACE_ID, PARENT_ID)
    assert daemon.stop() == 0


def test_an_event_a_loop_emits_runs_the_loops_it_fires_in_the_emitters_trace(
    workspace: Workspace, collector: Collector
) -> None:
    daemon, api = _start(workspace, collector.endpoint)
    _sent(api, "/loops/cleaner/trigger", {})
    reporter = _executed(daemon, collector, "execution reporter")
    [emitting] = collector.named("skill event.emit")
    assert (reporter.trace_id, reporter.parent_span_id) == (TRACE_ID, emitting.span_id)
    assert daemon.stop() == 0


def test_a_malformed_traceparent_is_ignored_and_the_execution_starts_a_trace(
    workspace: Workspace, collector: Collector
) -> None:
    daemon, api = _start(workspace, collector.endpoint)
    malformed = {"traceparent": f"00-{TRACE_ID.upper()}-{PARENT_ID}-01"}
    _sent(api, "/loops/by_hand/trigger", {}, malformed)
    execution = _executed(daemon, collector, "execution by_hand")
    assert execution.parent_span_id == ""
    assert execution.trace_id != TRACE_ID
    assert daemon.stop() == 0


def test_the_daemon_exports_the_spans_it_still_holds_when_it_stops(
    workspace: Workspace, collector: Collector
) -> None:
    daemon, _ = _start(workspace, collector.endpoint, delay_ms=3_600_000)
    done = workspace.json("trigger", "by_hand", "--wait")
    assert done["outcome"] == "completed"
    assert daemon.stop(signal.SIGTERM) == 0
    [execution] = collector.named("execution by_hand")
    assert execution.attributes["loopengine.execution.id"] == done["execution_id"]


def test_an_unreachable_collector_fails_no_execution_nor_the_daemon(
    workspace: Workspace,
) -> None:
    daemon, _ = _start(workspace, f"http://127.0.0.1:{_closed_port()}")
    for _ in range(2):
        assert workspace.json("trigger", "by_hand", "--wait")["outcome"] == "completed"
    assert daemon.process.poll() is None
    assert daemon.stop() == 0
