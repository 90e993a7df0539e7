"""The spans of an execution, kept in memory by the SDK's exporter: one per execution, phase,
skill call and LLM call, children of one another, with their attributes and error status; the
``traceparent`` an ``http.request`` sends names its skill's span."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import loopengine._tracing as tracing
from loopengine.contract import Config
from loopengine.skills import Registry
from loopengine.store import signals
from loopengine.testing import FakeLLMServer, reply, status
from tests.builtins.http_server import HostileServer, serving
from tests.engine.conftest import Harness, open_harness
from tests.otlp import spans

__all__ = ["spans"]

pytestmark = pytest.mark.anyio

ASKS_AND_CALLS = """\
id: asks_and_calls
trigger: {type: manual}
params:
  url: {type: string}
analyze:
  analysis_steps:
    - name: ask
      skill_id: llm.complete
      params: {prompt: Say hello., max_tokens: 16}
decide: {decision_tree: [], fallback_action: call}
act:
  actions:
    - action_id: call
      skill_id: http.request
      params: {url: '${ input.url }'}
"""
SENDS = """\
id: sends
trigger: {{type: manual}}
params:
  url: {{type: string}}
decide: {{decision_tree: [], fallback_action: send}}
act:
  actions:
    - action_id: send
      skill_id: {skill}
      params: {{url: '${{ input.url }}', {body}: {{state: down}}}}
"""
FAILS = """\
id: fails
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: explode}
act:
  actions:
    - action_id: explode
      skill_id: boom
"""
EMITS = """\
id: emits
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: log_only}
emit:
  - {on: [completed], event: infra.cache.cleaned}
"""
SLOW = """\
id: slow
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: wait}
act:
  actions:
    - action_id: wait
      skill_id: slow
      params: {seconds: 60}
"""
PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


@pytest.fixture
def web() -> Iterator[HostileServer]:
    with serving() as running:
        yield running


@pytest.fixture
async def traced(
    tmp_path: Path, engine_registry: Registry, llm: FakeLLMServer, web: HostileServer
) -> AsyncIterator[Harness]:
    node = {"base_url": llm.base_url, "model": "ol1", "timeout_s": 5}
    config = Config.model_validate(
        {
            "cluster": {"nodes": {"OL1": node}, "routing": {"default": ["OL1"]}},
            "actions": {"http": {"allow": [f"127.0.0.1:{web.port}"]}},
        }
    )
    async with open_harness(tmp_path, engine_registry, config) as opened:
        yield opened


def _named(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    [found] = [span for span in spans.get_finished_spans() if span.name == name]
    return found


def _parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def test_an_execution_is_a_span_over_its_phases_skill_calls_and_llm_calls(
    traced: Harness, spans: InMemorySpanExporter, llm: FakeLLMServer, web: HostileServer
) -> None:
    llm.script("ol1", [reply("Hello.")])
    done = await traced.engine.run(traced.loop(ASKS_AND_CALLS), inputs={"url": web.url("/echo")})
    execution = _named(spans, "execution asks_and_calls")
    analyze, act = _named(spans, "phase analyze"), _named(spans, "phase act")
    ask, call = _named(spans, "skill llm.complete"), _named(spans, "skill http.request")
    chat = _named(spans, "chat ol1")
    assert execution.parent is None
    assert _parent_id(analyze) == _parent_id(act) == _span_id(execution)
    assert _parent_id(ask) == _span_id(analyze)
    assert _parent_id(call) == _span_id(act)
    assert _parent_id(chat) == _span_id(ask)
    assert len({span.context.trace_id for span in spans.get_finished_spans() if span.context}) == 1
    assert execution.attributes is not None
    assert execution.attributes["loopengine.loop.id"] == "asks_and_calls"
    assert execution.attributes["loopengine.execution.id"] == done.execution_id
    assert execution.attributes["loopengine.outcome"] == "completed"
    assert execution.status.status_code is StatusCode.UNSET


async def test_an_llm_call_carries_the_genai_attributes_and_its_latency(
    traced: Harness, spans: InMemorySpanExporter, llm: FakeLLMServer, web: HostileServer
) -> None:
    llm.script("ol1", [reply("Hello.")])
    await traced.engine.run(traced.loop(ASKS_AND_CALLS), inputs={"url": web.url("/echo")})
    chat = _named(spans, "chat ol1")
    assert chat.kind is SpanKind.CLIENT
    attributes = dict(chat.attributes or {})
    latency = attributes.pop("loopengine.llm.latency_ms")
    assert isinstance(latency, float)
    assert latency > 0
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "ol1",
        "gen_ai.request.max_tokens": 16,
        "gen_ai.response.model": "ol1",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "server.address": "127.0.0.1",
        "server.port": urlsplit(llm.base_url).port,
        "loopengine.llm.node": "OL1",
    }


async def test_a_refused_llm_call_sets_its_spans_error_status(
    traced: Harness, spans: InMemorySpanExporter, llm: FakeLLMServer, web: HostileServer
) -> None:
    llm.script("ol1", [status(400, message="no such model")])
    await traced.engine.run(traced.loop(ASKS_AND_CALLS), inputs={"url": web.url("/echo")})
    chat = _named(spans, "chat ol1")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == "LLMError"


@pytest.mark.parametrize(("skill", "body"), [("http.request", "json"), ("webhook.send", "payload")])
async def test_an_outgoing_request_sends_the_traceparent_of_its_skill_span(
    traced: Harness, spans: InMemorySpanExporter, web: HostileServer, skill: str, body: str
) -> None:
    loop = traced.loop(SENDS.format(skill=skill, body=body))
    await traced.engine.run(loop, inputs={"url": web.url("/echo")})
    context = _named(spans, f"skill {skill}").context
    assert context is not None
    [sent] = [seen for seen in web.seen if seen["path"] == "/echo"]
    expected = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    assert sent["headers"]["traceparent"] == expected


async def test_a_failed_skill_marks_its_skill_phase_and_execution_spans_failed(
    traced: Harness, spans: InMemorySpanExporter
) -> None:
    done = await traced.engine.run(traced.loop(FAILS))
    assert done.outcome == "failed"
    for name in ("skill boom", "phase act", "execution fails"):
        span = _named(spans, name)
        assert span.status.status_code is StatusCode.ERROR, name
        assert "something broke" in (span.status.description or ""), name
    assert _named(spans, "execution fails").attributes is not None
    assert _named(spans, "execution fails").attributes["loopengine.outcome"] == "failed"


async def test_an_execution_continues_the_trace_its_triggers_traceparent_names(
    traced: Harness, spans: InMemorySpanExporter
) -> None:
    trigger = {"type": "manual", "id": "api", tracing.TRACEPARENT: PARENT}
    await traced.engine.run(traced.loop(FAILS), trigger=trigger)
    execution = _named(spans, "execution fails")
    assert execution.context is not None
    assert execution.parent is not None
    assert execution.parent.is_remote
    assert f"{execution.context.trace_id:032x}" == PARENT.split("-")[1]
    assert f"{execution.parent.span_id:016x}" == PARENT.split("-")[2]


async def test_an_event_the_loop_emits_keeps_its_executions_traceparent(
    traced: Harness, spans: InMemorySpanExporter
) -> None:
    await traced.engine.run(traced.loop(EMITS))
    execution = _named(spans, "execution emits").context
    assert execution is not None
    [event] = await traced.store.read(signals.list_events, lambda name: True, 10)
    expected = f"00-{execution.trace_id:032x}-{execution.span_id:016x}-{execution.trace_flags:02x}"
    assert event.traceparent == expected


async def test_a_cancelled_execution_records_its_end_inside_its_span(
    traced: Harness, spans: InMemorySpanExporter
) -> None:
    loop = traced.loop(SLOW)
    with anyio.move_on_after(0.5):
        await traced.engine.run(loop)
    execution, store = _named(spans, "execution slow"), _named(spans, "phase store")
    assert _parent_id(store) == _span_id(execution)
    assert execution.attributes is not None
    assert execution.attributes["loopengine.outcome"] == "cancelled"
    assert execution.status.status_code is StatusCode.ERROR
