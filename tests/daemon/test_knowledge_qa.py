"""The shipped loop ``knowledge_qa`` under ``loopengine daemon``: an event ``knowledge.question``
runs it, and its answer, with its citation, is announced as ``knowledge.answered``."""

from __future__ import annotations

import json
import shutil

from loopengine._resources import shipped_loop
from loopengine.testing import FakeLLMServer, reply
from tests.builtins.knowledge_base import KB, grading
from tests.daemon.conftest import Workspace
from tests.knowledge.conftest import write


def test_a_question_emitted_as_an_event_is_answered_and_announced(workspace: Workspace) -> None:
    loop = shipped_loop("knowledge_qa")
    assert loop is not None
    shutil.copy(loop, workspace.root / "loops" / "knowledge_qa.yaml")
    write(workspace.root, KB)
    with FakeLLMServer() as server:
        nodes = {
            name: {"base_url": server.base_url, "model": model, "timeout_s": 10}
            for name, model in (("J", "judge"), ("W", "writer"))
        }
        config = {
            "daemon": {"port": 0},
            "cluster": {"nodes": nodes, "routing": {"knowledge": ["W"]}},
            "knowledge": {"manual": {"sources": ["kb"], "grader": "J"}},
        }
        (workspace.root / "loopengine.yaml").write_text(json.dumps(config))
        workspace.cli("knowledge", "index")
        server.script("judge", grading(amber="0.9"))
        server.script("writer", [reply("Hold the pairing button for ten seconds [1].")])
        daemon = workspace.start()
        asked = {"question": "How do I do a factory reset?", "collection": "manual"}
        workspace.cli("emit", "knowledge.question", "--data", json.dumps(asked))
        daemon.wait_for(
            lambda line: line.get("kind") == "end" and line.get("loop") == "knowledge_qa"
        )
        assert daemon.stop() == 0
    [run] = workspace.json("history", "knowledge_qa")["executions"]
    assert run["outcome"] == "completed"
    [answered] = workspace.json("events", "list", "--name", "knowledge.answered")["events"]
    assert answered["data"] == {
        "question": "How do I do a factory reset?",
        "answer": "Hold the pairing button for ten seconds [1].",
        "citations": [{"n": 1, "source": "kb/hub.md", "heading": "Hub > Factory reset"}],
    }
