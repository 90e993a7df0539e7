"""A loop the daemon fails to schedule is refused alone: the daemon starts and serves the others,
and a reload keeps that loop's previous version while every other change of the scan applies.

A plugin, loaded in the daemon's process, makes scheduling fail for one cron expression, as a
fault of the scheduler would (validation accepts the expression).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tests.daemon.conftest import ON_EVENT, TICK, Workspace

FAULTS = """\
from loopengine import skill
from loopengine.daemon import _scheduler

UNSCHEDULABLE = "13 13 13 * *"
_rule_of = _scheduler.rule_of


def _refusing(config, concurrency):
    if config.expression == UNSCHEDULABLE:
        raise RuntimeError("the scheduler cannot take this one")
    return _rule_of(config, concurrency)


_scheduler.rule_of = _refusing


@skill
def idle(ctx):
    return {}
"""
EVERY_SECOND = """\
id: {id}
trigger: {{type: cron, config: {{expression: "{expression}", catchup: skip}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""


def _with_faults(workspace: Workspace) -> Path:
    (workspace.root / "faults.py").write_text(FAULTS)
    (workspace.root / "loopengine.yaml").write_text("daemon: {port: 0}\nplugins: [./faults.py]\n")
    return workspace.root / "loops"


def _fired(loop: str, **fields: Any) -> Any:
    def wanted(line: dict[str, Any]) -> bool:
        found = line.get("kind") == "fire" and line.get("loop") == loop
        return found and all(line.get(key) == value for key, value in fields.items())

    return wanted


def _count(lines: list[dict[str, Any]], wanted: Any) -> int:
    return sum(1 for line in lines if wanted(line))


def test_the_daemon_starts_without_the_loop_it_cannot_schedule_and_runs_the_others(
    workspace: Workspace,
) -> None:
    loops = _with_faults(workspace)
    (loops / "tick.yaml").write_text(TICK.format(catchup="skip"))
    (loops / "broken.yaml").write_text(EVERY_SECOND.format(id="broken", expression="13 13 13 * *"))
    daemon = workspace.start()
    try:
        ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
        daemon.wait_for(_fired("tick"))
    finally:
        assert daemon.stop() == 0
    assert ready["message"].startswith("1 loops from")
    [refused] = [line for line in daemon.lines() if line.get("loop") == "broken"]
    assert (refused["kind"], refused["file"], refused["message"]) == (
        "error",
        "loops/broken.yaml",
        "cannot schedule: RuntimeError: the scheduler cannot take this one; not scheduled",
    )


def test_a_reload_keeps_the_version_it_cannot_schedule_and_applies_the_rest_of_the_scan(
    workspace: Workspace,
) -> None:
    loops = _with_faults(workspace)
    edited = loops / "edited.yaml"
    edited.write_text(EVERY_SECOND.format(id="edited", expression="* * * * * *"))
    (loops / "on_event.yaml").write_text(ON_EVENT)
    daemon = workspace.start()
    try:
        edited.write_text(EVERY_SECOND.format(id="edited", expression="13 13 13 * *"))
        (loops / "on_event.yaml").write_text(ON_EVENT.replace("seo.page.*", "site.page.*"))
        (loops / "fresh.yaml").write_text(EVERY_SECOND.format(id="fresh", expression="* * * * * *"))
        refused = daemon.wait_for(lambda line: line.get("kind") == "error")
        daemon.wait_for(lambda line: line.get("kind") == "load" and line.get("loop") == "on_event")
        daemon.wait_for(_fired("fresh"))
        workspace.cli("emit", "seo.page.updated", "--data", '{"page": 1}')
        workspace.cli("emit", "site.page.updated", "--data", '{"page": 2}')
        daemon.wait_for(_fired("on_event", event="site.page.updated"))
        before = _count(daemon.lines(), _fired("edited"))
        daemon.wait_for(lambda _: _count(daemon.lines(), _fired("edited")) > before)
    finally:
        assert daemon.stop(signal.SIGTERM) == 0
    assert (refused["loop"], refused["message"]) == (
        "edited",
        "cannot schedule: RuntimeError: the scheduler cannot take this one; not scheduled "
        "(the previous version keeps running)",
    )
    assert _count(daemon.lines(), _fired("on_event", event="seo.page.updated")) == 0
