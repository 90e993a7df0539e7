"""``loopengine logs``: what an execution's skills logged, oldest first, as text or JSON, a page
after a cursor, or followed while the execution runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopengine.app import history, open_reader, read_now
from loopengine.cli import main
from loopengine.errors import LoopEngineError
from tests.daemon.conftest import Workspace
from tests.test_cli_run import make_workspace
from tests.waiting import wait_until

SKILLS = """\
import time
from loopengine import skill

@skill
def chatty(ctx, lines: int = 1, pause_s: float = 0.0):
    time.sleep(pause_s)
    for number in range(1, lines + 1):
        ctx.logger.info("line %d of %d", number, lines)
    ctx.logger.warning("<b>done</b>")
    return {}
"""
LOOP = """\
id: chatty
trigger: {type: manual}
params:
  lines: {type: integer, default: 3}
  pause_s: {type: number, default: 0}
analyze:
  analysis_steps:
    - {name: first, skill_id: chatty, params: {lines: "${ input.lines }"}}
decide: {decision_tree: [], fallback_action: go}
act:
  actions:
    - {action_id: go, skill_id: chatty, params: {lines: 1, pause_s: "${ input.pause_s }"}}
"""


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_workspace(tmp_path, monkeypatch, SKILLS, {"chatty.yaml": LOOP})


def _ran(capsys: pytest.CaptureFixture[str], *inputs: str) -> str:
    assert main(["run", "chatty.yaml", *inputs, "--json"]) == 0
    execution_id: str = json.loads(capsys.readouterr().out)["execution_id"]
    return execution_id


def _logs(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["logs", *args, "--json"]) == 0
    page: dict[str, Any] = json.loads(capsys.readouterr().out)
    return page


def test_the_lines_are_printed_oldest_first_with_their_phase_and_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    execution_id = _ran(capsys)
    assert main(["logs", execution_id[:8]]) == 0
    printed = [line.split(maxsplit=2)[1:] for line in capsys.readouterr().out.splitlines()]
    assert printed == [
        ["INFO", "analyze/first  line 1 of 3"],
        ["INFO", "analyze/first  line 2 of 3"],
        ["INFO", "analyze/first  line 3 of 3"],
        ["WARNING", "analyze/first  <b>done</b>"],
        ["INFO", "act/go  line 1 of 1"],
        ["WARNING", "act/go  <b>done</b>"],
    ]


def test_json_gives_each_line_and_the_cursor_for_the_next_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    execution_id = _ran(capsys)
    first = _logs(capsys, execution_id, "--limit", "4")
    assert [line["message"] for line in first["lines"]][:2] == ["line 1 of 3", "line 2 of 3"]
    assert set(first["lines"][0]) == {"at", "level", "phase", "step", "message"}
    assert (first["execution_id"], first["status"]) == (execution_id, "finished")
    rest = _logs(capsys, execution_id, "--after", str(first["after"]))
    assert [line["step"] for line in rest["lines"]] == ["go", "go"]
    assert _logs(capsys, execution_id, "--after", str(rest["after"]))["lines"] == []


def test_an_execution_that_logged_nothing_says_how_a_skill_logs(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quiet = (
        "id: quiet\ntrigger: {type: manual}\ndecide: {decision_tree: [], fallback_action: none}\n"
    )
    (workspace / "quiet.yaml").write_text(quiet)
    assert main(["run", "quiet.yaml", "--json"]) == 0
    execution_id = json.loads(capsys.readouterr().out)["execution_id"]
    assert main(["logs", execution_id]) == 0
    assert capsys.readouterr().out == (
        "Nothing logged: a skill logs with ctx.logger, INFO and above.\n"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--limit", "0"], "limit 0: write a whole number from 1 to 1000"),
        (["--after", "-1"], "after -1: write the cursor a page gave, or 0 for the first"),
    ],
)
def test_a_bound_out_of_range_is_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    execution_id = _ran(capsys)
    assert main(["logs", execution_id, *args]) == 2
    assert capsys.readouterr().err.strip().endswith(said)


def test_an_unknown_execution_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _ran(capsys)
    assert main(["logs", "feedbeef"]) != 0
    assert capsys.readouterr().err.strip() == (
        "error: no execution 'feedbeef' (see `loopengine history`)"
    )


def _started() -> str:
    """The id of the execution another process runs, once its first commit is in."""

    def running() -> str | None:
        try:
            with open_reader(None) as reader:
                rows = read_now(reader, history(limit=10)).rows
        except LoopEngineError:  # the other process has not made the store yet
            return None
        return next((row.id for row in rows if row.status == "running"), None)

    return wait_until(running, "the execution did not start")


def test_follow_prints_lines_as_they_commit_until_the_execution_ends(workspace: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    command = [sys.executable, "-m", "loopengine"]
    run = subprocess.Popen(
        [*command, "run", "chatty.yaml", "--input", "pause_s=2"],
        cwd=workspace,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        followed = Workspace(workspace, env).cli("logs", _started(), "--follow", check=False)
        assert run.wait(timeout=60) == 0
    finally:
        run.kill()
        run.wait()
    assert followed.returncode == 0, followed.stderr
    steps = [line.split()[2] for line in followed.stdout.splitlines()]
    assert steps == ["analyze/first"] * 4 + ["act/go"] * 2
