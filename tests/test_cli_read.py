"""Read commands read: they never write, never recover or escalate, never create `.loopengine/`;
only the commands that run loops or feed them make a store where there is none."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from loopengine.cli import main
from tests.test_cli_run import make_workspace


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_workspace(tmp_path, monkeypatch)


READS = (
    ["validate", "counter.yaml"],
    ["schema"],
    ["skills"],
    ["tools"],
)


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_command_that_needs_no_store_creates_none(command: list[str], workspace: Path) -> None:
    assert main(command) == 0
    assert not (workspace / ".loopengine").exists()


def test_history_of_a_store_where_nothing_ran_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "record", "cpu", "1"]) == 0
    capsys.readouterr()
    assert main(["history", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"executions": []}


def _rows(workspace: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(workspace / ".loopengine" / "loopengine.db") as connection:
        query = "SELECT id, status, outcome FROM executions ORDER BY started_at"
        return list(connection.execute(query))


def _crash_and_overdue(workspace: Path) -> None:
    """One execution left running by a dead process, one approval past its deadline."""
    with sqlite3.connect(workspace / ".loopengine" / "loopengine.db") as connection:
        connection.execute("UPDATE executions SET status = 'running', owner = 'gone:999999'")
        connection.execute("UPDATE approvals SET deadline = 0")


def test_history_and_show_neither_recover_nor_escalate(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "counter.yaml", "--input", "n=9"]) == 1
    assert main(["run", "counter.yaml"]) == 0
    _crash_and_overdue(workspace)
    before = _rows(workspace)
    capsys.readouterr()
    waiting = before[0][0]
    assert main(["history"]) == 0
    assert main(["show", waiting]) == 0
    assert main(["metrics", "list"]) == 0
    assert _rows(workspace) == before
    assert "approval: big pending" in capsys.readouterr().out


def test_a_write_command_escalates_an_overdue_approval(workspace: Path) -> None:
    assert main(["run", "counter.yaml", "--input", "n=9"]) == 1
    _crash_and_overdue(workspace)
    assert main(["flags", "list"]) == 0
    assert {outcome for _, _, outcome in _rows(workspace)} == {"escalated"}


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_history_leaves_the_database_file_as_it_was(workspace: Path, journal: str) -> None:
    assert main(["run", "counter.yaml"]) == 0
    database = workspace / ".loopengine" / "loopengine.db"
    with sqlite3.connect(database) as connection:
        connection.execute(f"PRAGMA journal_mode={journal}")
    before = database.read_bytes()
    assert main(["history"]) == 0
    assert main(["metrics", "list"]) == 0
    assert database.read_bytes() == before


def test_an_empty_database_file_is_no_store_and_stays_empty(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = workspace / ".loopengine" / "loopengine.db"
    database.parent.mkdir()
    database.touch()
    assert main(["history"]) == 2
    assert capsys.readouterr().err.startswith(f"error: no store at {database};")
    assert database.stat().st_size == 0


def test_metrics_list_shows_at_most_limit_series_that_match(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("cpu.a", "cpu.b", "cpu.c", "disk"):
        assert main(["metrics", "record", name, "1"]) == 0
    capsys.readouterr()
    assert main(["metrics", "list", "--name", "cpu.*", "--limit", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["metrics"]
    assert [series["name"] for series in listed] == ["cpu.a", "cpu.b"]


def test_metrics_list_refuses_a_limit_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "list", "--limit", "0"]) == 2
    assert "--limit 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--limit", "0"], "error: --limit 0: write a whole number from 1 to 10000"),
        (["--limit", "-1"], "error: --limit -1: write a whole number from 1 to 10000"),
        (
            ["--outcome", "complete"],
            "error: --outcome complete: not an outcome; did you mean 'completed'?",
        ),
    ],
)
def test_history_refuses_a_filter_that_can_show_nothing(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", *arguments]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_history_says_which_filter_matched_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml"]) == 0
    capsys.readouterr()
    assert main(["history", "--outcome", "failed"]) == 0
    assert capsys.readouterr().out == "No executions with outcome failed.\n"


def test_approving_an_unknown_execution_says_it_does_not_exist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "counter.yaml"]) == 0
    capsys.readouterr()
    assert main(["approve", "nope"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: no execution 'nope' (see `loopengine history`)"
    )


def test_an_execution_is_named_by_a_unique_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "counter.yaml", "--json"]) == 0
    execution_id = json.loads(capsys.readouterr().out)["execution_id"]
    assert main(["show", execution_id[:6], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["execution_id"] == execution_id


def test_a_binary_config_is_one_clear_line(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "loopengine.yaml").write_bytes(b"plugins: []\n\xcd\xff\x00")
    assert main(["history"]) == 2
    assert capsys.readouterr().err == (
        "loopengine.yaml:2:1: not UTF-8 text (byte 12): save the file as UTF-8\n"
    )


@pytest.mark.parametrize(
    "command",
    [["history"], ["show", "0123"], ["status"], ["metrics", "list"], ["events", "list"]],
    ids=" ".join,
)
def test_a_read_command_runs_without_an_event_loop(command: list[str], workspace: Path) -> None:
    """Reads need neither anyio nor the async store: a fresh interpreter never imports them."""
    assert main(["run", "counter.yaml"]) == 0
    code = (
        "import sys\nfrom loopengine.cli import main\n"
        f"main({command!r})\n"
        "print(sorted(m for m in ('anyio', 'loopengine.store._store') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"
