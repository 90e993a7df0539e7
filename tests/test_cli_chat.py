"""``loopengine chat`` end to end against the scripted server: modes, chain, sessions, JSON shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.cli import main
from loopengine.testing import FakeLLMServer, forever, reply, tool_call


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
    assert set(response) == {
        "reply",
        "mode",
        "turns",
        "session_id",
        "chain",
        "tools_used",
        "execution_id",
    }


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
    assert out[1] == "simple · 1 turns · [OL1 ▸ 1 turn, ok]"


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
