"""Built-in tools in their sandbox, and every failure turned into something the model can read."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loopengine.llm import Toolbox, builtin_tools
from loopengine.testing import FakeLLMServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "facts.txt").write_text("The sky is blue.\nWater is wet.\n")
    (tmp_path / "docs" / "notes.md").write_text("todo: water the plants\n")
    with sqlite3.connect(tmp_path / "app.db") as db:
        db.execute("create table users (name text)")
        db.executemany("insert into users values (?)", [("ada",), ("alan",)])
    return tmp_path


@pytest.fixture
def toolbox(root: Path) -> Toolbox:
    return Toolbox(builtin_tools(root, f"sqlite:///{root / 'app.db'}", ["127.0.0.1"]))


async def _run(toolbox: Toolbox, name: str, **arguments: Any) -> Any:
    return await toolbox.run(name, arguments)


async def test_list_dir(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "list_dir", path=".")
    assert outcome.ok
    assert [e["name"] for e in outcome.result] == ["app.db", "docs", "facts.txt"]


async def test_read_file(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "read_file", path="facts.txt")
    assert outcome.result["text"].startswith("The sky is blue.")


async def test_nothing_outside_the_root(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "read_file", path="../../etc/passwd")
    assert not outcome.ok
    assert "outside the tools root" in (outcome.error or "")


async def test_search_files(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "search_files", pattern="water")
    assert [(m["file"], m["line"]) for m in outcome.result] == [
        ("docs/notes.md", 1),
        ("facts.txt", 2),
    ]


async def test_query_db_reads(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "query_db", sql="SELECT name FROM users ORDER BY name")
    assert outcome.result["rows"] == [{"name": "ada"}, {"name": "alan"}]


@pytest.mark.parametrize(
    "sql", ["DELETE FROM users", "SELECT 1; DROP TABLE users", "PRAGMA writable_schema=1"]
)
async def test_query_db_refuses_anything_but_one_select(toolbox: Toolbox, sql: str) -> None:
    outcome = await _run(toolbox, "query_db", sql=sql)
    assert not outcome.ok


async def test_query_db_cannot_write_even_through_a_select(toolbox: Toolbox) -> None:
    outcome = await _run(
        toolbox, "query_db", sql="WITH x AS (SELECT 1) INSERT INTO users SELECT 'eve'"
    )
    assert not outcome.ok


async def test_http_get_reaches_an_allowed_loopback_host(toolbox: Toolbox) -> None:
    with FakeLLMServer() as server:
        outcome = await _run(toolbox, "http_get", url=server.base_url + "/models")
    assert (outcome.ok, outcome.result["status"]) == (True, 200)


async def test_http_get_blocks_loopback_unless_allowed(root: Path) -> None:
    strict = Toolbox(builtin_tools(root, "sqlite://"))
    outcome = await _run(strict, "http_get", url="http://127.0.0.1:9/")
    assert not outcome.ok
    assert "loopback or private" in (outcome.error or "")


async def test_an_unknown_tool_is_reported_not_raised(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "move_file", source="a", target="b")
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error.startswith("unknown tool 'move_file'")
    assert "available tools: http_get, list_dir, query_db, read_file, search_files" in outcome.error


async def test_a_missing_argument_is_reported(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "read_file")
    assert outcome.error == "invalid arguments for read_file: missing required argument 'path'"


async def test_an_exception_is_reported(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "read_file", path="missing.txt")
    assert outcome.error is not None
    assert outcome.error.startswith("FileNotFoundError")


def test_specs_are_openai_functions(toolbox: Toolbox) -> None:
    (spec,) = toolbox.specs(["read_file"])
    assert spec["function"]["name"] == "read_file"
    assert spec["function"]["parameters"]["required"] == ["path"]
    assert spec["function"]["parameters"]["properties"]["path"]["description"] == (
        "File, relative to the workspace root."
    )


def test_outcomes_serialise_for_the_model() -> None:
    from loopengine.llm import ToolOutcome

    assert ToolOutcome("t", {}, False, error="boom").content() == '{"error": "boom"}'
    assert ToolOutcome("t", {}, True, result=[1]).content() == '{"result": [1]}'
