"""Every command reaches the store of its project from anywhere: the config is found as git
finds `.git` (`--config`, else the nearest `loopengine.yaml` here or above, else
`$LOOPENGINE_CONFIG`, else defaults), and only the commands that run loops or feed them (`run`,
`daemon`, `trigger`, `emit`, `metrics record`, `chat`) make a store where there is none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopengine.cli import main
from tests.test_cli_run import make_workspace

NO_STORE = "run from the project folder or pass --config"


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_workspace(tmp_path, monkeypatch)


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside the project, with no config above it: the working directory."""
    folder = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(folder)
    return folder


def _store(folder: Path) -> Path:
    return folder / ".loopengine" / "loopengine.db"


FINDERS = (
    ["history"],
    ["show", "0123"],
    ["approvals"],
    ["status"],
    ["events", "list"],
    ["metrics", "list"],
    ["autolearn", "status"],
    ["autolearn", "scores"],
    ["autolearn", "history"],
    ["autolearn", "memory"],
    ["approve", "0123"],
    ["reject", "0123"],
    ["resume", "0123"],
    ["flags", "list"],
    ["flags", "set", "beta", "on"],
    ["pause", "counter"],
    ["unpause", "counter"],
)


@pytest.mark.parametrize("command", FINDERS, ids=" ".join)
def test_a_command_that_makes_no_store_says_where_it_looked(
    command: list[str], workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(command) == 2
    assert capsys.readouterr().err == f"error: no store at {_store(workspace)}; {NO_STORE}\n"
    assert not (workspace / ".loopengine").exists()


MAKERS = (
    ["run", "counter.yaml"],
    ["trigger", "counter.yaml"],
    ["emit", "page.updated"],
    ["metrics", "record", "cpu", "1"],
)


@pytest.mark.parametrize("command", MAKERS, ids=" ".join)
def test_a_command_that_runs_or_feeds_loops_makes_the_store(
    command: list[str], workspace: Path
) -> None:
    assert main(command) == 0
    assert _store(workspace).is_file()


def test_a_command_in_a_subfolder_reaches_the_project_store(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["emit", "page.updated"]) == 0
    (workspace / "loops" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(workspace / "loops" / "deeper")
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)["events"]] == ["page.updated"]
    assert main(["emit", "page.updated"]) == 0
    assert not (workspace / "loops" / ".loopengine").exists()


def test_from_another_folder_a_failed_approve_makes_nothing(
    workspace: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["approve", "0123"]) == 2
    assert capsys.readouterr().err == f"error: no store at {_store(elsewhere)}; {NO_STORE}\n"
    assert list(elsewhere.iterdir()) == []


def test_from_another_folder_the_environment_names_the_project(
    workspace: Path,
    elsewhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(workspace)
    assert main(["emit", "page.updated"]) == 0
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("LOOPENGINE_CONFIG", str(workspace / "loopengine.yaml"))
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["config"], shown["store"]) == (
        str(workspace / "loopengine.yaml"),
        str(_store(workspace)),
    )


def test_the_nearest_config_wins_over_the_environment(
    workspace: Path,
    elsewhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (elsewhere / "loopengine.yaml").write_text("plugins: []\n")
    monkeypatch.setenv("LOOPENGINE_CONFIG", str(workspace / "loopengine.yaml"))
    assert main(["emit", "page.updated"]) == 0
    assert _store(elsewhere).is_file()
    assert not _store(workspace).exists()


def test_status_names_its_config_and_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["emit", "page.updated"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == [
        "config: loopengine.yaml",
        "store: .loopengine/loopengine.db",
        "No daemon is running: start one with `loopengine daemon`.",
    ]


def test_status_says_when_no_config_was_found(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["emit", "page.updated"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "config: none (defaults)",
        "store: .loopengine/loopengine.db",
    ]


def test_debug_names_the_config_and_the_store(
    workspace: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPENGINE_CONFIG", str(workspace / "loopengine.yaml"))
    assert main(["emit", "page.updated"]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "loopengine", "events", "list", "--debug"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"DEBUG loopengine.settings: config: {workspace / 'loopengine.yaml'}" in done.stderr
    assert f"DEBUG loopengine.settings: store: {_store(workspace)}" in done.stderr


def test_an_emitted_secret_the_config_names_is_masked(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "loopengine.yaml").write_text("daemon: {token: '${ secret.API_TOKEN }'}\n")
    monkeypatch.setenv("API_TOKEN", "tok-5f1d9c0e7a2b")
    assert main(["emit", "page.updated", "--data", '{"token": "tok-5f1d9c0e7a2b"}']) == 0
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["events"][0]["data"] == {"token": "***"}
