"""``event.emit`` and ``metrics.record``: what a loop writes with its step's commit, the bounds of
``loopengine emit`` held, and nothing in a dry run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import LoopLoader, Outcome
from loopengine.contract.checks import Env
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, SkillOutput
from loopengine.store import signals
from loopengine.store.effects import AppendEvent, Metric, RecordMetrics
from loopengine.triggers import MAX_EVENT_BYTES, MAX_EVENT_DEPTH
from tests.engine.conftest import Harness, open_harness


def _ctx(*, dry_run: bool = False) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="cleaner",
        phase="act",
        step="announce",
        idempotency_key="e1:act:announce:0:1",
        dry_run=dry_run,
        clock=lambda: 1000.0,
    )


def _call(skill: str, ctx: SkillContext | None = None, /, **params: Any) -> SkillOutput:
    output = asyncio.run(builtin_registry().skill(skill).fn(ctx or _ctx(), **params))
    assert isinstance(output, SkillOutput)
    return output


def _problems(skill: str, /, **params: Any) -> list[str]:
    return [p.message for p in builtin_registry().skill(skill).check_params(params, frozenset())]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_event_emit_hands_the_event_to_the_steps_commit() -> None:
    output = _call("event.emit", name="disk.cleaned", data={"freed": 42})
    assert output.effects == (AppendEvent("disk.cleaned", "cleaner", {"freed": 42}, 1000.0, "e1"),)
    assert output.data == {
        "event": {"name": "disk.cleaned", "data": {"freed": 42}, "emitted": True}
    }


def test_event_emit_without_data_emits_an_empty_object() -> None:
    [event] = _call("event.emit", name="disk.cleaned").effects
    assert event == AppendEvent("disk.cleaned", "cleaner", {}, 1000.0, "e1")


def test_a_dry_run_emits_nothing_and_says_what_it_would_have() -> None:
    output = _call("event.emit", _ctx(dry_run=True), name="disk.cleaned", data={"freed": 1})
    assert output.effects == ()
    assert output.data["event"] == {"name": "disk.cleaned", "data": {"freed": 1}, "emitted": False}


def test_an_action_called_with_dry_run_emits_nothing() -> None:
    assert _call("event.emit", name="disk.cleaned", dry_run=True).effects == ()


def test_an_event_name_that_is_not_one_is_refused_at_validate() -> None:
    [problem] = _problems("event.emit", name="disk cleaned!")
    assert "write dot-separated names" in problem


def test_validate_points_at_an_event_name_in_a_loop_file() -> None:
    text = CHAIN.replace("name: disk.cleaned", 'name: "disk cleaned!"')
    report = LoopLoader(Env(builtin_registry(), frozenset())).load_text(text, "loop.yaml")
    [problem] = [d.format() for d in report.diagnostics]
    assert problem.startswith("loop.yaml:8:22: act.actions[0].params.name: ")
    assert "e.g. seo.page.updated" in problem


def test_event_data_larger_than_emit_takes_is_refused() -> None:
    with pytest.raises(SkillError, match=f"over {MAX_EVENT_BYTES} bytes"):
        _call("event.emit", name="big", data={"blob": "x" * MAX_EVENT_BYTES})


def test_event_data_nested_deeper_than_emit_takes_is_refused() -> None:
    with pytest.raises(SkillError, match=f"nested more than {MAX_EVENT_DEPTH} levels"):
        _call("event.emit", name="deep", data=_nested(100_000))


def test_event_data_within_the_bounds_is_emitted() -> None:
    assert _call("event.emit", name="deep", data=_nested(MAX_EVENT_DEPTH)).effects


def test_event_data_is_measured_in_utf8_bytes_as_loopengine_emit_measures_it() -> None:
    """60,000 bytes in UTF-8; escaped as ASCII it would be 180,000."""
    assert _call("event.emit", name="noted", data="é" * 30_000).effects


def test_metrics_record_hands_the_point_to_the_steps_commit() -> None:
    output = _call("metrics.record", name="disk.freed", value=42.5, labels={"host": "a"})
    assert output.effects == (RecordMetrics((Metric("disk.freed", 42.5, {"host": "a"}),), 1000.0),)
    assert output.data["metric"]["recorded"] is True


def test_a_dry_run_records_no_metric_point() -> None:
    output = _call("metrics.record", _ctx(dry_run=True), name="disk.freed", value=1.0)
    assert output.effects == ()
    assert output.data["metric"] == {
        "name": "disk.freed",
        "value": 1.0,
        "labels": {},
        "recorded": False,
    }


@pytest.mark.parametrize(
    "params",
    [
        {"name": "m", "value": float("nan")},
        {"name": "m", "value": float("inf")},
        {"name": "", "value": 1},
        {"name": "m" * 201, "value": 1},
        {"name": "m", "value": 1, "labels": {f"k{i}": "v" for i in range(33)}},
        {"name": "m", "value": 1, "labels": {"k": "v" * 1001}},
        {"name": "m", "value": 1, "labels": {"k": 3}},
        {"name": "m", "value": 1, "labels": {"": "v"}},
        {"name": "m", "value": 1, "labels": {"k" * 101: "v"}},
    ],
    ids=[
        "nan",
        "infinity",
        "empty-name",
        "long-name",
        "many-labels",
        "long-label",
        "number-label",
        "empty-key",
        "long-key",
    ],
)
def test_metrics_record_refuses_a_point_past_its_bounds_at_validate(
    params: dict[str, Any],
) -> None:
    assert _problems("metrics.record", **params)


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    async with open_harness(tmp_path, builtin_registry()) as opened:
        yield opened


CHAIN = """\
id: cleaner
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: announce}
act:
  actions:
    - action_id: announce
      skill_id: event.emit
      params: {name: disk.cleaned, data: {freed: 42, by: "${ decision.action }"}}
    - action_id: count
      on: [announce]
      skill_id: metrics.record
      params: {name: disk.freed, value: 42, labels: {by: "${ loop.id }"}}
"""


@pytest.mark.anyio
async def test_a_loops_action_writes_its_event_and_point_with_its_execution(
    harness: Harness,
) -> None:
    done = await harness.engine.run(harness.loop(CHAIN))
    assert done.outcome is Outcome.COMPLETED
    [event] = await harness.store.read(signals.recent_events, 0)
    assert (event.name, event.source, event.execution_id) == (
        "disk.cleaned",
        "cleaner",
        done.execution_id,
    )
    assert event.data == {"freed": 42, "by": "announce"}
    points = await harness.store.read(signals.metric_points, "disk.freed", None)
    assert [(p.value, p.labels) for p in points] == [(42.0, {"by": "cleaner"})]
    act = harness.phase(await harness.view(done), "act")
    assert act["data"]["calls"][0]["result"]["event"]["emitted"] is True


@pytest.mark.anyio
async def test_a_dry_run_of_the_loop_writes_neither(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(CHAIN), dry_run=True)
    assert done.outcome is Outcome.DRY_RUN
    assert await harness.store.read(signals.recent_events, 0) == []
    assert await harness.store.read(signals.metric_points, "disk.freed", None) == []


def test_a_point_at_its_bounds_is_taken() -> None:
    labels = {f"{i:0100d}": "v" * 1000 for i in range(32)}
    assert _problems("metrics.record", name="m" * 200, value=1e308, labels=labels) == []


@pytest.mark.anyio
async def test_a_secret_in_the_data_is_masked_in_the_event_log(tmp_path: Path) -> None:
    loop = CHAIN.replace('by: "${ decision.action }"', 'token: "${ secret.EMIT_TOKEN }"')
    environ = {"EMIT_TOKEN": "emitT0kenZq81xw"}
    async with open_harness(tmp_path, builtin_registry(), environ=environ) as harness:
        await harness.engine.run(harness.loop(loop))
        [event] = await harness.store.read(signals.recent_events, 0)
    assert "emitT0kenZq81xw" not in str(event.data)
    assert event.data["freed"] == 42
