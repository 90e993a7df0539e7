"""Two loops chained through the event log under ``loopengine daemon``: one's action emits
(``event.emit``), the other's event trigger runs on it."""

from __future__ import annotations

from tests.daemon.conftest import Workspace

PRODUCER = """\
id: cleaner
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: announce}
act:
  actions:
    - action_id: announce
      skill_id: event.emit
      params: {name: disk.cleaned, data: {freed: 42, by: "${ loop.id }"}}
"""
CONSUMER = """\
id: reporter
trigger: {type: event, config: {event_pattern: "disk.*", filter: "data.freed > `40`"}}
decide: {decision_tree: [], fallback_action: log_only}
"""


def test_an_emitted_event_runs_the_loop_whose_trigger_matches_it(workspace: Workspace) -> None:
    loops = workspace.root / "loops"
    (loops / "cleaner.yaml").write_text(PRODUCER)
    (loops / "reporter.yaml").write_text(CONSUMER)
    daemon = workspace.start()
    produced = workspace.json("trigger", "cleaner", "--wait")
    assert produced["outcome"] == "completed"
    daemon.wait_for(lambda line: line.get("kind") == "end" and line.get("loop") == "reporter")
    assert daemon.stop() == 0

    [run] = workspace.json("history", "reporter")["executions"]
    assert run["outcome"] == "completed"
    event = run["trigger"]["event"]
    assert (event["name"], event["data"]) == ("disk.cleaned", {"freed": 42, "by": "cleaner"})
