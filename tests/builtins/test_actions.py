"""Built-in actions: what they record and log, and the events they hand to the step's commit."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import Outcome
from loopengine.errors import SkillError
from loopengine.skills import SkillContext
from loopengine.store import signals
from loopengine.store.effects import AppendEvent
from tests.engine.conftest import Harness, open_harness


def _ctx(*, dry_run: bool = False) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="seo",
        phase="act",
        step="builtin",
        idempotency_key="e1:act:builtin",
        data={"decision": {"action": "auto_fix_batch"}},
        dry_run=dry_run,
    )


def _call(name: str, *, dry_run: bool = False, **params: Any) -> Any:
    definition = builtin_registry().skill(name)
    return asyncio.run(definition.fn(_ctx(dry_run=dry_run), **params))


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    async with open_harness(tmp_path, builtin_registry()) as opened:
        yield opened


def _deciding(action: str, **params: Any) -> str:
    """A loop whose one decision is the built-in ``action`` with ``params``."""
    given = json.dumps(params)
    return f"""\
id: seo
trigger: {{type: manual}}
decide: {{decision_tree: [], fallback_action: {action}}}
act:
  actions:
    - {{action_id: {action}, skill_id: {action}, params: {given}}}
"""


def test_log_only_logs_the_decision(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="loopengine.skills"):
        assert _call("log_only") == {"log": {"message": "loop seo decided 'auto_fix_batch'"}}
    assert "decided 'auto_fix_batch'" in caplog.text


def test_notify_describes_the_notification_event() -> None:
    assert _call("notify", message="3 warnings").data == {
        "notification": {
            "event": "loop.notification",
            "message": "3 warnings",
            "severity": "info",
            "emitted": True,
        }
    }


def test_notify_hands_its_event_to_the_steps_commit() -> None:
    [event] = _call("notify", message="3 warnings", event="seo.report").effects
    assert event == AppendEvent(
        "seo.report",
        "seo",
        {"message": "3 warnings", "severity": "info", "loop_id": "seo", "execution_id": "e1"},
        event.at,
        "e1",
    )


def test_a_dry_run_hands_over_no_event() -> None:
    output = _call("notify", dry_run=True)
    assert output.effects == ()
    assert output.data["notification"]["emitted"] is False


def test_escalate_to_human_hands_over_an_escalation_event() -> None:
    [event] = _call("escalate_to_human", reason="needs a look").effects
    assert (event.name, event.data["reason"]) == ("loop.escalated", "needs a look")


@pytest.mark.parametrize(
    ("action", "params", "refused"),
    [
        ("notify", {"event": "not a name!"}, "event name 'not a name!'"),
        ("escalate_to_human", {"target": "ops/on call"}, "event name 'ops/on call'"),
        ("notify", {"message": "x" * 70_000}, "the data of loop.notification is over"),
        ("escalate_to_human", {"reason": "x" * 70_000}, "the data of loop.escalated is over"),
    ],
    ids=["notify-name", "escalate-target", "notify-message", "escalate-reason"],
)
def test_an_announcement_no_event_may_carry_is_refused(
    action: str, params: dict[str, Any], refused: str
) -> None:
    with pytest.raises(SkillError, match=re.escape(refused)):
        _call(action, **params)


def test_log_and_notify_does_both() -> None:
    output = _call("log_and_notify")
    assert set(output.data) == {"log", "notification"}
    assert [event.name for event in output.effects] == ["loop.notification"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("action", "params", "name"),
    [
        ("notify", {"message": "3 warnings", "event": "seo.report"}, "seo.report"),
        ("escalate_to_human", {"reason": "needs a look"}, "loop.escalated"),
    ],
)
async def test_a_loops_announcement_is_in_the_event_log_with_its_execution(
    harness: Harness, action: str, params: dict[str, Any], name: str
) -> None:
    done = await harness.engine.run(harness.loop(_deciding(action, **params)))
    assert done.outcome is Outcome.COMPLETED
    [event] = await harness.store.read(signals.recent_events, 0)
    assert (event.name, event.source, event.execution_id) == (name, "seo", done.execution_id)


@pytest.mark.anyio
async def test_a_dry_run_of_the_loop_announces_nothing(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_deciding("notify")), dry_run=True)
    assert done.outcome is Outcome.DRY_RUN
    assert await harness.store.read(signals.recent_events, 0) == []


def test_escalate_to_human_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopengine.skills"):
        result = _call("escalate_to_human", target="agent.seo.architect").data
    assert result["escalation"]["target"] == "agent.seo.architect"
    assert "escalated to agent.seo.architect" in caplog.text


def test_none_does_nothing() -> None:
    assert _call("none") == {}
