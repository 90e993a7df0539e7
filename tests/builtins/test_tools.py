"""Built-in tools in their sandbox, and every failure turned into something the model can read."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import MAX_READ, builtin_tools, offered_tools
from loopengine.contract import Config
from loopengine.llm import Toolbox
from loopengine.skills import Registry
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


@pytest.mark.parametrize(
    "sql", ["SELECT ';' AS semicolon", "-- why\nSELECT 1 AS one", "/* a */ select 2 as two;"]
)
async def test_query_db_accepts_one_select_however_it_is_written(
    toolbox: Toolbox, sql: str
) -> None:
    outcome = await _run(toolbox, "query_db", sql=sql)
    assert outcome.ok, outcome.error
    assert outcome.result["count"] == 1


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
    assert "is a loopback, private or metadata address" in (outcome.error or "")


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


async def test_read_file_refuses_a_link_out_of_the_root(toolbox: Toolbox, root: Path) -> None:
    (root / "env").symlink_to("/proc/self/environ")
    outcome = await _run(toolbox, "read_file", path="env")
    assert outcome.error == "PermissionError: 'env' is outside the tools root"


async def test_read_file_refuses_a_fifo_instead_of_blocking(toolbox: Toolbox, root: Path) -> None:
    os.mkfifo(root / "pipe")
    outcome = await _run(toolbox, "read_file", path="pipe")
    assert outcome.error == "PermissionError: 'pipe' is not a regular file"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": "facts.txt", "max_bytes": MAX_READ + 1}),
        ("read_file", {"path": "facts.txt", "max_bytes": 0}),
        ("query_db", {"sql": "select 1", "limit": 0}),
        ("query_db", {"sql": "select 1", "limit": -1}),
        ("search_files", {"pattern": "a", "max_results": 10_000}),
    ],
)
async def test_sizes_a_model_asks_for_are_bounded(
    toolbox: Toolbox, name: str, arguments: dict[str, Any]
) -> None:
    outcome = await toolbox.run(name, arguments)
    assert (outcome.error or "").startswith(f"invalid arguments for {name}:")


async def test_search_files_does_not_follow_links(toolbox: Toolbox, root: Path) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("water token\n")
    (root / "docs" / "linked").symlink_to(outside)
    (root / "linked.txt").symlink_to(outside / "secret.txt")
    outcome = await _run(toolbox, "search_files", pattern="token")
    assert outcome.result == []


async def test_search_files_explains_a_bad_pattern(toolbox: Toolbox) -> None:
    outcome = await _run(toolbox, "search_files", pattern="(unclosed")
    assert (outcome.error or "").startswith("ValueError: invalid regular expression")


async def test_a_tool_that_overruns_its_deadline_is_stopped(root: Path) -> None:
    slow = Toolbox([_sleeper()], timeout_s=0.2)
    outcome = await slow.run("sleepy", {})
    assert outcome.error == "sleepy did not finish within 0.2 s: stopped"


def _sleeper() -> Any:
    from loopengine.skills import ATTRIBUTE, tool

    @tool("sleepy")
    def sleepy() -> str:
        """Sleep past any deadline."""
        time.sleep(2)
        return "late"

    return getattr(sleepy, ATTRIBUTE)


async def test_query_db_sees_no_database_unless_one_is_named(root: Path) -> None:
    toolbox = Toolbox(offered_tools(Config(), root, Registry(), ()))
    outcome = await _run(toolbox, "query_db", sql="select 1")
    assert "no database is open to tools" in (outcome.error or "")


async def test_a_relative_tools_database_starts_at_the_config_folder(root: Path) -> None:
    config = Config(databases={"default": "sqlite:///app.db"})
    toolbox = Toolbox(offered_tools(config, root, Registry(), ()))
    outcome = await _run(toolbox, "query_db", sql="select name from users order by name")
    assert [row["name"] for row in outcome.result["rows"]] == ["ada", "alan"]
