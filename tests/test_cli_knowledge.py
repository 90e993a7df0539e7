"""``loopengine knowledge list | index | search``: index writes, shows progress on a terminal
only, and reports what it skipped; list and search only read."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from loopengine.cli import main
from loopengine.commands import Console
from loopengine.commands.knowledge import run_knowledge_index
from loopengine.knowledge import _sources
from tests.knowledge.conftest import GUIDE, write


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path, GUIDE)
    (tmp_path / "loopengine.yaml").write_text("knowledge:\n  docs: {sources: [kb]}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    return tmp_path


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_index_then_search_prints_the_best_chunks_as_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["knowledge", "index"]) == 0
    assert capsys.readouterr().out.startswith(
        "docs  3 files: 3 new or changed, 0 unchanged, 0 removed · 4 chunks written · "
    )
    found = _json(capsys, "knowledge", "search", "docs", "apt package", "--k", "1")
    assert found == {
        "results": [
            {
                "source": "kb/install.md",
                "heading": "Install > Linux",
                "text": "Use apt to install the package on Debian.",
                "score": found["results"][0]["score"],
            }
        ]
    }


def test_search_shows_where_each_chunk_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["knowledge", "index"]) == 0
    capsys.readouterr()
    assert main(["knowledge", "search", "docs", "apt"]) == 0
    (first, text) = capsys.readouterr().out.splitlines()
    assert first.startswith("1. kb/install.md#Install > Linux  ")
    assert text == "   Use apt to install the package on Debian."


def test_list_shows_each_collection_with_its_files_chunks_and_last_index(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["knowledge", "index", "--json"]) == 0
    capsys.readouterr()
    (listed,) = _json(capsys, "knowledge", "list")["collections"]
    assert {key: listed[key] for key in ("name", "sources", "files", "chunks", "vectors")} == {
        "name": "docs",
        "sources": ["kb"],
        "files": 3,
        "chunks": 4,
        "vectors": 0,
    }
    assert listed["indexed_at"].endswith("+00:00")


def test_index_reports_what_it_skipped(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "kb" / "blob.txt").write_bytes(b"\x00\x01")
    assert main(["knowledge", "index"]) == 0
    assert "  skipped kb/blob.txt: binary, not text" in capsys.readouterr().out.splitlines()


def test_index_counts_what_it_skipped_past_the_listed(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sources, "MAX_SKIPPED", 1)
    for name in ("a", "b", "c"):
        (workspace / "kb" / f"{name}.txt").write_bytes(b"\x00")
    assert main(["knowledge", "index"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  skipped kb/a.txt: binary, not text",
        "  skipped 2 more",
    ]


def test_index_shows_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown, piped = Terminal(), io.StringIO()
    for out in (shown, piped):
        anyio.run(run_knowledge_index, Console(out, io.StringIO()), None, None, False)
    assert "\r\x1b[2Kdocs: 3/3 files" in shown.getvalue()
    assert "\r" not in piped.getvalue()


def test_read_commands_leave_the_store_as_it_was(workspace: Path) -> None:
    assert main(["knowledge", "index"]) == 0
    database = workspace / ".loopengine" / "loopengine.db"
    before = database.read_bytes()
    assert main(["knowledge", "list"]) == 0
    assert main(["knowledge", "search", "docs", "install"]) == 0
    assert database.read_bytes() == before


def test_read_commands_create_no_store(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["knowledge", "search", "docs", "install"]) == 2
    assert "error: no store at" in capsys.readouterr().err
    assert not (workspace / ".loopengine").exists()


def test_list_runs_without_an_event_loop(workspace: Path) -> None:
    assert main(["knowledge", "index"]) == 0
    code = (
        "import sys\nfrom loopengine.cli import main\nmain(['knowledge', 'list'])\n"
        "print(sorted(m for m in ('anyio', 'loopengine.store._store') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["search", "manuals", "x"],
            "error: no knowledge collection 'manuals' (collections: docs)",
        ),
        (
            ["index", "doc"],
            "error: no knowledge collection 'doc'; did you mean 'docs'? (collections: docs)",
        ),
        (["search", "docs", "x", "--k", "0"], "error: k 0: write a whole number from 1 to 100"),
        (
            ["search", "docs", "x" * 10_240],
            "error: the query is 10,240 characters: at most 2,000 are searched",
        ),
    ],
)
def test_bad_input_is_one_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["knowledge", "index"]) == 0
    capsys.readouterr()
    assert main(["knowledge", *arguments]) != 0
    assert capsys.readouterr().err.splitlines() == [message]


def test_searching_a_collection_never_indexed_says_how_to_index_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "loopengine.yaml").write_text(
        "knowledge:\n  docs: {sources: [kb]}\n  notes: {sources: [kb]}\n"
    )
    assert main(["knowledge", "index", "docs"]) == 0
    capsys.readouterr()
    assert main(["knowledge", "search", "notes", "install"]) != 0
    assert capsys.readouterr().err.splitlines() == [
        "error: collection 'notes' was never indexed: run `loopengine knowledge index notes`"
    ]


def test_the_help_shows_the_config_and_the_three_actions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["knowledge", "--help"])
    shown = capsys.readouterr().out
    assert 'sources: ["kb/**/*.md", "manuals/"]' in shown
    assert all(action in shown for action in ("list ", "index ", "search "))
