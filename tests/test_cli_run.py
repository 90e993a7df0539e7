"""The run-time commands as users type them: run, history, show, reject, resume, inputs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from loopengine.cli import main
from loopengine.commands.approvals import time_left
from loopengine.contract import Phase

SKILLS = """\
from loopengine import skill

@skill
def count(ctx, n: int = 1):
    return {"counted": n}
"""
LOOP = """\
id: counter
trigger: {type: manual}
params:
  n: {type: integer, default: 3}
analyze:
  analysis_steps: [{name: c, skill_id: count, params: {n: "${ input.n }"}}]
decide:
  decision_tree: [{condition: "counted > 5", action: big}]
  fallback_action: log_only
  human_approval: {required_for: [big]}
act:
  actions: [{action_id: big, skill_id: count, on: [big]}]
"""


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_workspace(tmp_path, monkeypatch)


def make_workspace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    skills: str = SKILLS,
    loops: Mapping[str, str] = MappingProxyType({"counter.yaml": LOOP}),
) -> Path:
    """A folder with a plugin (``skills``) and loop files (the counter loop by default), the
    working directory of the test."""
    (tmp_path / "skills.py").write_text(skills)
    (tmp_path / "loopengine.yaml").write_text("plugins: [./skills.py]\n")
    for name, text in loops.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_run_prints_a_summary_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml"]) == 0
    out = capsys.readouterr().out
    assert "completed" in out
    assert "decision: log_only (no rule applied: fallback action)" in out


def test_the_summary_shows_what_a_builtin_logged_and_which_phases_did_not_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "counter.yaml"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "log: loop counter decided 'log_only'" in lines["act"]
    assert lines["detect"].split()[2:] == ["–", "not", "in", "the", "loop"]


def test_run_json_is_the_full_record(capsys: pytest.CaptureFixture[str]) -> None:
    code, record = _json(capsys, "run", "counter.yaml", "--input", "n=2")
    assert code == 0
    assert record["job"]["payload"] == {"n": 2}
    assert [p["phase"] for p in record["phases"]] == list(Phase)


def test_an_unknown_input_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml", "--input", "m=2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --input m: loop 'counter' has no param 'm' (params: n)"
    )


@pytest.mark.parametrize("command", ["run", "trigger"])
def test_a_loop_without_params_takes_no_input(
    command: str, capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    (workspace / "plain.yaml").write_text("id: plain\ntrigger: {type: manual}\n")
    assert main([command, "plain.yaml", "--input", "nosuch=1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --input nosuch: loop 'plain' has no param 'nosuch' (the loop declares none, so "
        "it takes no inputs)"
    )


def test_an_input_of_the_wrong_type_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml", "--input", "n=lots"]) == 2
    assert (
        capsys.readouterr().err.strip() == "error: --input n=lots: 'lots' is not of type 'integer'"
    )


def test_an_invalid_loop_is_reported_like_validate(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    (workspace / "bad.yaml").write_text("id: bad\ntrigger: {type: manual}\ndurability: sometimes\n")
    assert main(["run", "bad.yaml"]) == 2
    assert capsys.readouterr().err.startswith(
        "bad.yaml:3:13: durability: invalid value 'sometimes'; expected one of: phase, execution"
    )


def test_history_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    _, first = _json(capsys, "run", "counter.yaml")
    _, history = _json(capsys, "history", "counter")
    assert [e["execution_id"] for e in history["executions"]] == [first["execution_id"]]
    code, shown = _json(capsys, "show", first["execution_id"])
    assert (code, shown["outcome"]) == (0, "completed")


def test_show_an_unknown_execution(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml"]) == 0
    capsys.readouterr()
    assert main(["show", "nope"]) == 1
    assert "no execution 'nope'" in capsys.readouterr().err


def test_reject_ends_a_waiting_execution(capsys: pytest.CaptureFixture[str]) -> None:
    code, waiting = _json(capsys, "run", "counter.yaml", "--input", "n=9")
    assert (code, waiting["outcome"]) == (1, "awaiting_approval")
    code, rejected = _json(capsys, "reject", waiting["execution_id"], "--note", "not today")
    assert (code, rejected["outcome"], rejected["approval"]["note"]) == (0, "rejected", "not today")


def test_a_rejection_note_reads_as_a_note_not_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, waiting = _json(capsys, "run", "counter.yaml", "--input", "n=9")
    assert main(["reject", waiting["execution_id"], "--note", "not today"]) == 0
    out = capsys.readouterr().out
    assert "approval: big rejected (" in out
    assert out.count("not today") == 1
    assert "error:" not in out


def test_a_repeated_idempotency_key_returns_the_first_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, first = _json(capsys, "run", "counter.yaml", "--idempotency-key", "nightly-2026-11-22")
    _, second = _json(capsys, "run", "counter.yaml", "--idempotency-key", "nightly-2026-11-22")
    assert second["execution_id"] == first["execution_id"]


def test_dry_run_marks_the_execution(capsys: pytest.CaptureFixture[str]) -> None:
    _, record = _json(capsys, "run", "counter.yaml", "--dry-run")
    assert record["dry_run"] is True


def test_a_dry_run_ends_as_dry_run_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml", "--dry-run"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.split()[::2] == ["counter", "dry_run"]


def test_a_dry_run_says_where_it_would_wait_for_approval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "counter.yaml", "--input", "n=9", "--dry-run"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert lines["decide"].split()[3:] == ["would", "wait", "for", "approval"]
    assert lines["act"].split()[2:] == ["–", "execution", "ended:", "dry_run"]


def test_history_lists_dry_runs_by_their_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    _, real = _json(capsys, "run", "counter.yaml")
    _, dry = _json(capsys, "run", "counter.yaml", "--dry-run")
    _, listed = _json(capsys, "history", "--outcome", "dry_run")
    assert [e["execution_id"] for e in listed["executions"]] == [dry["execution_id"]]
    _, completed = _json(capsys, "history", "--outcome", "completed")
    assert [e["execution_id"] for e in completed["executions"]] == [real["execution_id"]]


def test_show_prints_what_each_action_returned(capsys: pytest.CaptureFixture[str]) -> None:
    _, waiting = _json(capsys, "run", "counter.yaml", "--input", "n=9")
    assert main(["approve", waiting["execution_id"]]) == 0
    capsys.readouterr()
    assert main(["show", waiting["execution_id"]]) == 0
    assert '  result of big: {"counted": 1}' in capsys.readouterr().out.splitlines()


def test_show_prints_ten_results_and_how_many_more(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "many.yaml").write_text(
        "id: many\ntrigger: {type: manual}\ndecide: {decision_tree: [], fallback_action: go}\n"
        "act:\n  actions:\n    - {action_id: go, skill_id: count, items: '[1,2,3,4,5,6,7,8,9,10,11,12]',"
        " max_affected: 20, params: {n: '${ item }'}}\n"
    )
    assert main(["run", "many.yaml"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "result" in line]
    assert lines[0] == '  result of go: {"counted": 1}'
    assert lines[10:] == ["  … and 2 more results (`show --json` has them all)"]


def test_show_of_a_waiting_execution_shows_the_analysis_and_what_would_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, waiting = _json(capsys, "run", "counter.yaml", "--input", "n=9")
    assert main(["show", waiting["execution_id"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:3] == [
        "  decision: big (rule 0 holds: counted > 5)",
        '  analysis c: {"counted": 9}',
    ]
    assert lines[4] == "  would run big: count {}"


def test_approvals_lists_what_waits_oldest_first(capsys: pytest.CaptureFixture[str]) -> None:
    _, first = _json(capsys, "run", "counter.yaml", "--input", "n=9")
    _, second = _json(capsys, "run", "counter.yaml", "--input", "n=7")
    assert main(["approvals"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["counter", first["execution_id"], "big"]
    assert lines[0].endswith("m left")
    assert lines[1:3] == [
        "  decision: big (rule 0 holds: counted > 5)",
        "  would run big: count {}",
    ]
    assert lines[3].split()[1] == second["execution_id"]
    _, listed = _json(capsys, "approvals", "--limit", "1")
    [gate] = listed["approvals"]
    assert (gate["execution_id"], gate["plan"]) == (
        first["execution_id"],
        [{"action_id": "big", "skill": "count", "params": {}}],
    )


def test_approvals_says_when_nothing_waits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml"]) == 0
    capsys.readouterr()
    assert main(["approvals"]) == 0
    assert capsys.readouterr().out == "Nothing waits for approval.\n"


def test_approvals_refuses_a_limit_out_of_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["approvals", "--limit", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --limit 0: write a whole number from 1 to 10000"
    )


def test_resume_refuses_a_finished_execution(capsys: pytest.CaptureFixture[str]) -> None:
    _, record = _json(capsys, "run", "counter.yaml")
    assert main(["resume", record["execution_id"]]) == 1
    assert "is completed, not interrupted" in capsys.readouterr().err


def test_flags_and_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    code, point = _json(capsys, "metrics", "record", "queue.depth", "7", "--label", "node=a")
    assert (code, point["value"], point["labels"]) == (0, 7.0, {"node": "a"})
    assert main(["flags", "set", "beta", "on"]) == 0
    assert capsys.readouterr().out.strip() == "flag beta is on"
    _, flags = _json(capsys, "flags", "list")
    assert [(f["name"], f["enabled"]) for f in flags["flags"]] == [("beta", True)]


def test_a_bad_flag_state_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["flags", "set", "beta", "maybe"]) == 2
    assert capsys.readouterr().err.strip() == "error: flag state 'maybe': write on or off"


def test_the_database_follows_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    monkeypatch.setenv("LOOPENGINE_DATABASE", f"sqlite:///{workspace / 'elsewhere.db'}")
    assert main(["run", "counter.yaml"]) == 0
    assert (workspace / "elsewhere.db").exists()
    assert not (workspace / ".loopengine" / "loopengine.db").exists()


def test_a_dry_run_sends_no_notification(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "tell.yaml").write_text(
        "id: tell\ntrigger: {type: manual}\ndecide: {decision_tree: [], fallback_action: notify}\n"
    )
    assert main(["run", "tell.yaml", "--dry-run"]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"events": []}
    assert main(["run", "tell.yaml"]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)["events"]] == [
        "loop.notification"
    ]


@pytest.mark.parametrize(
    ("seconds", "overdue", "said"),
    [
        (86_400 + 7200 + 59, False, "1d 2h left"),
        (3 * 3600 + 59 * 60 + 59, False, "3h 59m left"),
        (61, False, "1m left"),
        (59.9, False, "59s left"),
        (0, True, "overdue (the next command that runs loops escalates it)"),
    ],
)
def test_the_time_left_before_escalation_reads_to_the_minute(
    seconds: float, overdue: bool, said: str
) -> None:
    assert time_left(seconds, overdue) == said
