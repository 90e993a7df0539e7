"""``loopengine daemon`` as a user runs it: each trigger type starts its loop, unattended."""

from __future__ import annotations

import signal
import time
from datetime import datetime
from functools import partial
from typing import Any

from tests.daemon.conftest import BY_HAND, HOT, ON_EVENT, TICK, Workspace


def _by_loop(workspace: Workspace) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for row in workspace.json("history", "--limit", "100")["executions"]:
        found.setdefault(row["loop_id"], []).append(row)
    return found


def _ended(line: dict[str, Any], loop: str) -> bool:
    return line.get("kind") == "end" and line.get("loop") == loop


def test_every_trigger_type_starts_its_loop_and_history_says_how(workspace: Workspace) -> None:
    loops = workspace.root / "loops"
    for name, text in (
        ("tick", TICK.format(catchup="latest")),
        ("on_event", ON_EVENT),
        ("hot", HOT),
        ("by_hand", BY_HAND),
    ):
        (loops / f"{name}.yaml").write_text(text)
    daemon = workspace.start()
    workspace.cli("emit", "seo.page.updated", "--data", '{"page": 3}')
    workspace.cli("emit", "seo.page.updated", "--data", '{"page": 0}')
    workspace.cli("emit", "other.thing")
    for value in ("0.9", "0.95", "0.4", "0.9"):
        workspace.cli("metrics", "record", "cpu.load", value)
    manual = workspace.cli("trigger", "by_hand", "--wait", "--json")
    assert '"outcome": "completed"' in manual.stdout
    for loop, runs in (("tick", 1), ("on_event", 1), ("hot", 2)):
        daemon.wait_for(partial(_ended, loop=loop), count=runs)
    assert daemon.stop(signal.SIGTERM) == 0

    runs = _by_loop(workspace)
    assert [r["trigger"]["event"]["data"] for r in runs["on_event"]] == [{"page": 3}]
    assert len(runs["hot"]) == 2
    assert {r["trigger"]["metric"]["value"] for r in runs["hot"]} == {0.9}
    assert [r["trigger"]["type"] for r in runs["by_hand"]] == ["manual"]
    assert runs["tick"]
    assert all(r["trigger"]["scheduled_for"] for r in runs["tick"])
    assert all(r["outcome"] == "completed" for rows in runs.values() for r in rows)


def test_status_shows_the_daemon_its_loops_and_their_next_fire_after_now(
    workspace: Workspace,
) -> None:
    """The loop fires every 2 s and the daemon writes its row every 10 s: read after a fire, the
    row's first slot has passed."""
    (workspace.root / "loops" / "tick.yaml").write_text(TICK.format(catchup="skip"))
    daemon = workspace.start()
    try:
        daemon.wait_for(lambda line: line.get("kind") == "end" and line.get("loop") == "tick")
        asked = time.time()
        status = workspace.json("status")
    finally:
        assert daemon.stop() == 0
    assert len(status["daemons"]) == 1
    [loop] = status["loops"]
    assert (loop["loop_id"], loop["paused"]) == ("tick", False)
    assert datetime.fromisoformat(loop["triggers"][0]["next_fire"]).timestamp() > asked
    assert workspace.json("status")["daemons"] == []


def test_a_paused_loop_records_its_slots_as_paused(workspace: Workspace) -> None:
    (workspace.root / "loops" / "tick.yaml").write_text(TICK.format(catchup="latest"))
    workspace.cli("emit", "deploy.started")  # pause, unlike emit, makes no store
    workspace.cli("pause", "tick")
    daemon = workspace.start()
    line = daemon.wait_for(lambda line: line.get("kind") == "skip")
    assert (line["status"], line["loop"]) == ("paused", "tick")
    workspace.cli("unpause", "tick")
    daemon.wait_for(lambda line: line.get("kind") == "fire" and line.get("loop") == "tick")
    assert daemon.stop() == 0


def test_an_invalid_edit_keeps_the_running_version_and_a_deletion_unschedules(
    workspace: Workspace,
) -> None:
    path = workspace.root / "loops" / "by_hand.yaml"
    path.write_text(BY_HAND)
    daemon = workspace.start()
    path.write_text(BY_HAND.replace("decide:", "decide: [oops]\nx:"))
    daemon.wait_for(lambda line: "previous version keeps running" in line.get("message", ""))
    assert daemon.lines()[-1]["file"] == "loops/by_hand.yaml"
    path.unlink()
    daemon.wait_for(lambda line: line.get("kind") == "unload" and line.get("loop") == "by_hand")
    assert daemon.stop() == 0
