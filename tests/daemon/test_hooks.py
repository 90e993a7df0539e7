"""Which loop serves a webhook path: the first claim keeps it across reloads, a second claim is
logged, and takes over once the first is gone."""

from __future__ import annotations

import io

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.daemon import DaemonLog
from loopengine.daemon._hooks import HookTable

DECIDE = "decide: {decision_tree: [], fallback_action: log_only}\n"


def _loop(loop_id: str, path: str | None) -> Loop:
    trigger = f"{{type: webhook, config: {{path: '{path}'}}}}" if path else "{type: manual}"
    text = f"id: {loop_id}\ntrigger: {trigger}\n{DECIDE}"
    report = LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x")
    assert report.loop is not None, report.diagnostics
    return report.loop


def _served(table: HookTable, path: str) -> str | None:
    route = table.route(path)
    return route.loop.id if route else None


def test_a_path_is_served_with_or_without_its_slashes() -> None:
    table = HookTable(DaemonLog(io.StringIO()))
    table.update([_loop("deployed", "/deploy/done/")], [])
    assert _served(table, "deploy/done") == "deployed"
    assert _served(table, "deploy") is None


def test_the_first_claim_serves_and_the_second_is_logged_naming_both() -> None:
    log = io.StringIO()
    table = HookTable(DaemonLog(log))
    table.update([_loop("first", "same"), _loop("second", "same")], [])
    assert _served(table, "same") == "first"
    assert "served by loop 'first'" in log.getvalue()
    assert "loop 'second' (trigger 'webhook') claims it too" in log.getvalue()


def test_a_reload_keeps_the_first_claim_in_place() -> None:
    table = HookTable(DaemonLog(io.StringIO()))
    table.update([_loop("first", "same"), _loop("second", "same")], [])
    table.update([_loop("first", "same")], [])
    assert _served(table, "same") == "first"


def test_the_second_claim_takes_over_once_the_first_is_gone() -> None:
    table = HookTable(DaemonLog(io.StringIO()))
    table.update([_loop("first", "same"), _loop("second", "same")], [])
    table.update([], ["first"])
    assert _served(table, "same") == "second"


def test_a_loop_reloaded_without_its_webhook_frees_the_path() -> None:
    table = HookTable(DaemonLog(io.StringIO()))
    table.update([_loop("deployed", "deploy/done")], [])
    table.update([_loop("deployed", None)], [])
    assert _served(table, "deploy/done") is None
