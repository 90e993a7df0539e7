"""``loopengine chat`` end to end against the scripted server: modes, chain, sessions, JSON shape."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from loopengine.cli import main
from loopengine.commands import Console, progress_line
from loopengine.commands.chat import run_chat
from loopengine.testing import FakeLLMServer, forever, reply, tool_call

RESPONSE_KEYS = {"reply", "mode", "turns", "session_id", "chain", "tools_used", "execution_id"}
"""The chat response (seed 000 §5), as ``--json`` prints it and ``POST /chat`` answers it."""


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        (tmp_path / "facts.txt").write_text("Loops have seven phases.")
        nodes = "\n".join(
            f"    {name}: {{base_url: '{running.base_url}', model: {name.lower()}, timeout_s: 5}}"
            for name in ("OL1", "M1", "M2")
        )
        (tmp_path / "loopengine.yaml").write_text(
            f"cluster:\n  nodes:\n{nodes}\n  routing:\n    default: [OL1, M1]\n"
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
        monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
        yield running


def _chat(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["chat", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_simple_question_uses_one_node(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("ol1", [reply("Paris.")])
    code, response = _chat(capsys, "Capital of France?")
    assert code == 0
    assert (response["reply"], response["mode"], response["turns"]) == ("Paris.", "simple", 1)
    assert [stage["node"] for stage in response["chain"]] == ["OL1"]
    assert set(response) == RESPONSE_KEYS


def test_the_reflexive_chain_with_tools_and_a_loop_stopped(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("ol1", [forever(tool_call("list_dir", {"path": "."}))])
    server.script(
        "m1", [tool_call("read_file", {"path": "facts.txt"}), reply("Loops have seven phases.")]
    )
    server.script("m2", [reply("Reviewed: loops have seven phases.")])
    code, response = _chat(capsys, "Analyse the facts file and explain what it says")
    assert code == 0
    assert response["mode"] == "reflexive"
    assert [(s["node"], s["status"]) for s in response["chain"]] == [
        ("OL1", "loop_stopped"),
        ("M1", "ok"),
        ("M2", "ok"),
    ]
    assert response["reply"] == "Reviewed: loops have seven phases."
    assert [t["name"] for t in response["tools_used"]] == ["list_dir", "read_file"]


@pytest.mark.parametrize(
    ("mode", "nodes"), [("reflexive", ["OL1", "M1", "M2"]), ("simple", ["OL1"])]
)
def test_mode_overrides_what_the_message_would_choose(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], mode: str, nodes: list[str]
) -> None:
    for name in ("ol1", "m1", "m2"):
        server.script(name, [reply(f"{name} says hi.")])
    message = "Capital of France?" if mode == "reflexive" else "Analyse the facts file in depth"
    code, response = _chat(capsys, message, "--mode", mode)
    assert (code, response["mode"]) == (0, mode)
    assert [stage["node"] for stage in response["chain"]] == nodes


def test_a_session_continues_its_thread(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("ol1", [reply("Hello Ada."), reply("Your name is Ada.")])
    _, first = _chat(capsys, "My name is Ada")
    _, second = _chat(capsys, "What is my name?", "--session", first["session_id"])
    assert second["session_id"] == first["session_id"]
    messages = server.requests_for("ol1")[1]["messages"]
    assert [m["content"] for m in messages if m["role"] != "system"] == [
        "My name is Ada",
        "Hello Ada.",
        "What is my name?",
    ]


def test_without_nodes_chat_says_what_to_configure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    assert main(["chat", "hi"]) == 2
    assert "no LLM nodes configured" in capsys.readouterr().err


def test_the_human_output_shows_the_chain(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("ol1", [reply("Paris.")])
    assert main(["chat", "Capital of France?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Paris."
    assert out[1] == "simple · 1 turn · [OL1 ▸ 1 turn, ok]"


def test_no_reply_is_one_clear_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "cluster:\n  nodes:\n    OL1: {base_url: 'http://127.0.0.1:9/v1', model: m, timeout_s: 2}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    assert main(["chat", "hello"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no reply (OL1: node OL1 (http://127.0.0.1:9/v1) unreachable")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_each_stage_and_tool_as_it_happens(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    server.script("ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("Facts read.")])
    server.script("m1", [tool_call("move_file", {"to": "x"}), reply("Seven phases.")])
    server.script("m2", [reply("Reviewed: seven phases.")])
    terminal = _Terminal()
    message = "Analyse the facts file and explain what it says"
    code = anyio.run(run_chat, Console(terminal), message, None, None, False)
    assert code == 0
    lines = terminal.getvalue().splitlines()
    assert lines[:6] == [
        "OL1 · research…",
        '  ↳ read_file({"path": "facts.txt"}) ok',
        "M1 · analysis…",
        '  ↳ move_file({"to": "x"}) error: unknown tool \'move_file\'; did you mean '
        "'read_file'?; available tools: http_get, list_dir, query_db, read_file, search_files",
        "M2 · review…",
        "",
    ]
    assert lines[6] == "Reviewed: seven phases."


def test_progress_lines_say_why_a_stage_did_not_finish() -> None:
    skipped = {"node": "M1", "status": "skipped", "reason": "node M1 is cooling down"}
    assert progress_line("llm.stage_done", skipped) == "  M1 skipped: node M1 is cooling down"
    assert progress_line("llm.stage_done", {"node": "M2", "status": "ok"}) is None
    long_args = {"name": "search_files", "args": {"pattern": "x" * 200}, "ok": True}
    line = progress_line("llm.tool", long_args)
    assert line is not None
    assert line.endswith("…) ok")
    assert len(line) < 110


def _routed(tmp_path: Path, server: FakeLLMServer, routing: str) -> None:
    """A config of the nodes OL1 (the grader, by default), M1 and M2 with ``routing``."""
    nodes = "\n".join(
        f"    {name}: {{base_url: '{server.base_url}', model: {name.lower()}, timeout_s: 5}}"
        for name in ("OL1", "M1", "M2")
    )
    (tmp_path / "loopengine.yaml").write_text(f"cluster:\n  nodes:\n{nodes}\n{routing}")


def _categories() -> list[tuple[str, str]]:
    from loopengine.store import autolearn, create_engine

    with create_engine("sqlite:///.loopengine/loopengine.db").connect() as connection:
        return [(s.node, s.category) for s in autolearn.samples_in_window(connection, 50)]


@pytest.mark.parametrize(
    ("routing", "given", "node", "category"),
    [
        ("{simple: [M2, M1]}", [], "M2", "simple"),
        ("{simple: [M2], trivia: [M1]}", ["--category", "trivia"], "M1", "trivia"),
    ],
    ids=["by-its-mode", "by-the-category-given"],
)
def test_a_message_is_routed_by_the_category_given_else_by_its_mode(
    server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    routing: str,
    given: list[str],
    node: str,
    category: str,
) -> None:
    _routed(tmp_path, server, f"  routing: {routing}\n")
    server.script(node.lower(), [reply("Paris.")])
    code, response = _chat(capsys, "Capital of France?", *given)
    assert (code, [stage["node"] for stage in response["chain"]]) == (0, [node])
    assert _categories() == [(node, category)]


def test_without_routing_no_message_goes_to_the_grader(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _routed(tmp_path, server, "autolearn: {explore: 1.0}\n")
    server.script("m1", [forever(reply("Hello."))])
    server.script("m2", [forever(reply("Hello."))])
    answered = []
    for _ in range(4):
        code, response = _chat(capsys, "hi")
        assert code == 0
        answered += [stage["node"] for stage in response["chain"]]
    assert "OL1" not in answered
    assert {category for _, category in _categories()} == {"default"}
