"""Built-in actions: what they record and log."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.skills import SkillContext
from loopengine.store import Store, signals
from loopengine.testing import memory_store


def _ctx(store: Store | None = None, *, dry_run: bool = False) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="seo",
        phase="act",
        step="builtin",
        idempotency_key="e1:act:builtin",
        data={"decision": {"action": "auto_fix_batch"}},
        store=store,
        dry_run=dry_run,
    )


def _call(name: str, **params: Any) -> Any:
    definition = builtin_registry().skill(name)
    return asyncio.run(definition.fn(_ctx(), **params))


def _events_after(name: str, *, dry_run: bool = False, **params: Any) -> list[signals.Event]:
    """The events the action appends to a fresh store's log."""

    async def scenario() -> list[signals.Event]:
        async with memory_store() as store:
            await builtin_registry().skill(name).fn(_ctx(store, dry_run=dry_run), **params)
            return await store.read(signals.list_events, lambda _: True, 10)

    return asyncio.run(scenario())


def test_log_only_logs_the_decision(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="loopengine.skills"):
        assert _call("log_only") == {"log": {"message": "loop seo decided 'auto_fix_batch'"}}
    assert "decided 'auto_fix_batch'" in caplog.text


def test_notify_describes_the_notification_event() -> None:
    assert _call("notify", message="3 warnings") == {
        "notification": {
            "event": "loop.notification",
            "message": "3 warnings",
            "severity": "info",
            "emitted": False,
        }
    }


def test_notify_appends_its_event_to_the_log() -> None:
    [event] = _events_after("notify", message="3 warnings", event="seo.report")
    assert (event.name, event.source, event.execution_id) == ("seo.report", "seo", "e1")
    assert event.data["message"] == "3 warnings"


def test_a_dry_run_appends_no_event() -> None:
    assert _events_after("notify", dry_run=True) == []


def test_escalate_to_human_appends_an_escalation_event() -> None:
    [event] = _events_after("escalate_to_human", reason="needs a look")
    assert (event.name, event.data["reason"]) == ("loop.escalated", "needs a look")


def test_log_and_notify_does_both() -> None:
    assert set(_call("log_and_notify")) == {"log", "notification"}


def test_escalate_to_human_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="loopengine.skills"):
        result = _call("escalate_to_human", target="agent.seo.architect")
    assert result["escalation"]["target"] == "agent.seo.architect"
    assert "escalated to agent.seo.architect" in caplog.text


def test_none_does_nothing() -> None:
    assert _call("none") == {}
