"""Built-in actions: what they record and log."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from loopengine.skills import SkillContext
from loopengine.skills.builtin import builtin_registry


def _ctx(decision: str = "auto_fix_batch") -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="seo",
        phase="act",
        step="builtin",
        idempotency_key="e1:act:builtin",
        data={"decision": {"action": decision}},
    )


def _call(name: str, **params: Any) -> Any:
    definition = builtin_registry().skill(name)
    return asyncio.run(definition.fn(_ctx(), **params))


def test_log_only_logs_the_decision(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="loopengine.skills"):
        assert _call("log_only") == {"log": {"message": "loop seo decided 'auto_fix_batch'"}}
    assert "decided 'auto_fix_batch'" in caplog.text


def test_notify_describes_the_notification_event() -> None:
    assert _call("notify", message="3 warnings") == {
        "notification": {"event": "loop.notification", "message": "3 warnings", "severity": "info"}
    }


def test_log_and_notify_does_both() -> None:
    assert set(_call("log_and_notify")) == {"log", "notification"}


def test_escalate_to_human_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopengine.skills"):
        result = _call("escalate_to_human", target="agent.seo.architect")
    assert result["escalation"]["target"] == "agent.seo.architect"
    assert "escalated to agent.seo.architect" in caplog.text


def test_none_does_nothing() -> None:
    assert _call("none") == {}
