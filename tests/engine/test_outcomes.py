"""Every outcome of the contract is reachable, each by the situation that means it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from loopengine.contract import Outcome
from loopengine.engine import (
    Engine,
    ExecutionDone,
    answer_approval,
    escalate_overdue,
    recover_interrupted,
)
from loopengine.skills import Registry
from loopengine.store import PhaseResult, executions, signals
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness, open_harness
from tests.waiting import DEADLINE_S

pytestmark = pytest.mark.anyio

FIX_LOOP = """\
id: fixer
trigger: {type: manual}
analyze:
  analysis_steps:
    - {name: probe, skill_id: report, params: {values: {violations: {count: 12, before: 12}}, confidence: 0.95}}
decide:
  decision_tree:
    - {condition: "violations.count > 10", action: fix_all}
act:
  actions:
    - {action_id: fix, skill_id: fix, params: {after: AFTER}, rollback_skill: undo}
validate:
  assertions:
    - {expression: "violations.after <= violations.before"}
  auto_rollback: {enabled: ROLLBACK}
"""


def _fix_loop(after: int = 3, rollback: bool = True) -> str:
    return FIX_LOOP.replace("AFTER", str(after)).replace("ROLLBACK", str(rollback).lower())


async def test_completed(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_fix_loop()))
    assert done.outcome is Outcome.COMPLETED


async def test_skipped_by_skip_if(harness: Harness) -> None:
    loop = harness.loop(
        "id: skipper\ntrigger: {type: manual}\ndetect:\n  skip_if:\n    - {expression: 'input.off'}\n"
        "params:\n  off: {type: boolean, default: true}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.SKIPPED


async def test_nothing_detected_when_a_condition_fails(harness: Harness) -> None:
    loop = harness.loop(
        "id: quiet\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {skill: report, name: probe, params: {values: {violations: {count: 0}}}}\n"
        "  conditions:\n    - {expression: 'violations.count > 0'}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.NOTHING_DETECTED


async def test_no_action_when_no_rule_applies_and_no_fallback(harness: Harness) -> None:
    loop = harness.loop(
        "id: idle\ntrigger: {type: manual}\ndecide:\n  decision_tree:\n"
        "    - {condition: 'violations.count > 10', action: log_only}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.NO_ACTION


APPROVAL_LOOP = (
    _fix_loop()
    + """\
  max_rollback_time_ms: 5000
"""
)


def _gated(timeout_hours: float = 24) -> str:
    return _fix_loop().replace(
        "act:\n",
        f"  human_approval: {{required_for: [fix_all], timeout_hours: {timeout_hours}, "
        "escalation_target: agent.seo.architect}\nact:\n",
    )


async def test_awaiting_approval(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_gated()))
    assert done.outcome is Outcome.AWAITING_APPROVAL


async def test_rejected(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_gated()))
    rejected = await answer_approval(
        harness.engine, harness.load_loop, done.execution_id, False, "no"
    )
    assert rejected.outcome is Outcome.REJECTED


async def test_escalated_after_the_approval_window(
    tmp_path: Path, engine_registry: Registry
) -> None:
    now = time.time()
    async with open_harness(tmp_path, engine_registry, clock=lambda: now) as harness:
        done = await harness.engine.run(harness.loop(_gated(timeout_hours=1)))
        assert await escalate_overdue(harness.engine, harness.load_loop) == []
        now += 3601
        assert await escalate_overdue(harness.engine, harness.load_loop) == [done.execution_id]
        view = await harness.view(done)
        events = await harness.store.read(signals.recent_events, 0)
    assert view["outcome"] == Outcome.ESCALATED
    assert [e.name for e in events] == ["agent.seo.architect"]


async def test_failed_when_a_skill_raises(harness: Harness) -> None:
    loop = harness.loop(
        "id: broken\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: b, skill_id: boom}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.FAILED
    assert "ValueError: something broke" in (done.error or "")


async def test_failed_when_an_error_assertion_fails_without_rollback(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_fix_loop(after=20, rollback=False)))
    assert done.outcome is Outcome.FAILED


async def test_rolled_back_when_an_error_assertion_fails(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_fix_loop(after=20, rollback=True)))
    assert done.outcome is Outcome.ROLLED_BACK


async def test_budget_exceeded(harness: Harness) -> None:
    loop = harness.loop(
        "id: spender\ntrigger: {type: manual}\nbudget: {tokens: 150}\nanalyze:\n  analysis_steps:\n"
        "    - {name: a, skill_id: spend}\n    - {name: b, skill_id: spend}\n"
        "    - {name: c, skill_id: spend}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.BUDGET_EXCEEDED
    assert done.error == "token budget of 150 spent"


async def test_timed_out(harness: Harness) -> None:
    loop = harness.loop(
        "id: sleepy\ntrigger: {type: manual}\nanalyze:\n  timeout_ms: 50\n  analysis_steps:\n"
        "    - {name: s, skill_id: slow, params: {seconds: 5}}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.TIMED_OUT


async def test_interrupted_when_the_running_process_died(harness: Harness) -> None:
    loop = harness.loop(_gated())
    done = await harness.engine.run(loop)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    owner = f"{__import__('socket').gethostname()}:{dead.stdout.strip()}"
    await harness.store.write(
        lambda c: executions.update_execution(c, done.execution_id, status="running", owner=owner)
    )
    assert await recover_interrupted(harness.engine) == [done.execution_id]
    view = await harness.view(done)
    assert (view["status"], view["outcome"]) == ("interrupted", Outcome.INTERRUPTED)


async def test_cancelled_is_recorded(harness: Harness) -> None:
    loop = harness.loop(
        "id: cancel_me\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: s, skill_id: slow, params: {seconds: 30}}\n"
    )
    async with anyio.create_task_group() as group:
        group.start_soon(harness.engine.run, loop)
        with anyio.fail_after(DEADLINE_S):
            while not any(call["skill"] == "slow" for call in skills_for_tests.CALLS):
                await anyio.sleep(0.01)
        cancelled = time.monotonic()
        group.cancel_scope.cancel()
    assert time.monotonic() - cancelled < 10
    rows = await harness.store.read(lambda c: executions.list_executions(c, loop_id="cancel_me"))
    assert [r.outcome for r in rows] == [Outcome.CANCELLED]


async def test_a_cancel_while_the_last_commit_is_made_does_not_finish_twice(
    harness: Harness,
) -> None:
    loop = harness.loop(
        "id: finishing\ntrigger: {type: manual}\n"
        "analyze:\n  analysis_steps: [{name: a, skill_id: report}]\n"
        "store:\n  audit_trail: {enabled: true}\n"
    )
    scope = anyio.CancelScope()

    def cancel_after_store(loop_id: str, record: PhaseResult) -> None:
        if record.phase == "store":
            scope.cancel()

    engine = Engine(harness.engine.services, cancel_after_store)
    with scope:
        await engine.run(loop)
    rows = await harness.store.read(lambda c: executions.list_executions(c, loop_id="finishing"))
    assert [row.outcome for row in rows] == [Outcome.COMPLETED]
    view = await harness.view(ExecutionDone(rows[0].id, Outcome.COMPLETED))
    assert [p["phase"] for p in view["phases"]].count("store") == 1
