"""The shipped loop ``knowledge_qa`` on ``examples/knowledge`` as a user runs it (``loopengine
knowledge index``, then ``loopengine run knowledge_qa``), its nodes scripted on 127.0.0.1: a
question the manual answers is answered with its citation, one it does not is refused."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.cli import main
from loopengine.testing import FakeLLMServer, reply
from tests.builtins.knowledge_base import grading
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "knowledge"
PORT = "http://127.0.0.1:8790/v1"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """The example, indexed in a copy whose nodes are served by the scripted server."""
    folder = tmp_path / "knowledge"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(".loopengine"))
    config = folder / "loopengine.yaml"
    monkeypatch.chdir(folder)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    with FakeLLMServer() as running:
        assert PORT in config.read_text()
        config.write_text(config.read_text().replace(PORT, running.base_url))
        assert main(["knowledge", "index"]) == 0
        yield running


def _announced(capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    [event] = json.loads(capsys.readouterr().out)["events"]
    return event["name"], event["data"]


def test_a_question_the_manual_answers_is_announced_with_its_citation(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("judge", grading(amber="0.9"))
    server.script("writer", [reply("Hold the pairing button for ten seconds [1].")])
    question = "How do I do a factory reset?"
    assert main(["run", "knowledge_qa", "--input", f"question={question}"]) == 0
    assert _announced(capsys) == (
        "knowledge.answered",
        {
            "question": question,
            "answer": "Hold the pairing button for ten seconds [1].",
            "citations": [
                {
                    "n": 1,
                    "source": "kb/troubleshooting.md",
                    "heading": "Troubleshooting > Factory reset",
                }
            ],
        },
    )


def test_a_question_the_manual_does_not_answer_is_refused_saying_what_was_searched(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("judge", grading())
    server.script("writer", [reply("hub water resistance"), reply("IP rating")])
    question = "Is the hub waterproof?"
    assert main(["run", "knowledge_qa", "--input", f"question={question}"]) == 0
    name, data = _announced(capsys)
    assert (name, data["question"], data["reason"]) == (
        "knowledge.refused",
        question,
        "the knowledge base held no passage graded above 0.3",
    )
    assert data["answer"].startswith(
        "No answer: the knowledge base held no passage graded above 0.3. Searched 'docs' for "
        '"Is the hub waterproof?", "hub water resistance", "IP rating"'
    )


def test_a_dry_run_asks_no_model_and_ends_as_a_dry_run_saying_what_would_be_asked(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "How do I do a factory reset?"
    assert main(["run", "knowledge_qa", "--dry-run", "--input", f"question={question}"]) == 0
    capsys.readouterr()
    assert main(["history", "--json"]) == 0
    [run] = json.loads(capsys.readouterr().out)["executions"]
    assert run["outcome"] == "dry_run"
    assert main(["show", run["execution_id"], "--json"]) == 0
    asked = json.loads(capsys.readouterr().out)["analysis"]["answer"]["rag"]
    assert (asked["dry_run"], asked["question"], asked["collection"]) == (True, question, "docs")
    assert asked["answer"] == (
        'Dry run: no model was asked. "How do I do a factory reset?" would be answered from '
        "'docs'."
    )
    assert server.requests == []


def test_the_shipped_index_loop_takes_in_a_file_added_to_the_manual(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (Path("kb") / "warranty.md").write_text("# Warranty\n\nThe hub is covered for two years.\n")
    assert main(["run", "knowledge_index", "--json"]) == 0
    execution_id = json.loads(capsys.readouterr().out)["execution_id"]
    assert main(["logs", execution_id, "--json"]) == 0
    [line] = json.loads(capsys.readouterr().out)["lines"]
    assert line["message"] == (
        "docs: 4 files, 1 new or changed, 0 removed, 1 chunks written, 0 skipped"
    )
    assert main(["knowledge", "search", "docs", "warranty years", "--k", "1", "--json"]) == 0
    [found] = json.loads(capsys.readouterr().out)["results"]
    assert found["source"] == "kb/warranty.md"
