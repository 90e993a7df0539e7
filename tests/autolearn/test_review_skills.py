"""The shipped autoreview loop as users run it: weak responses make the review node propose
instructions, applied only when the grader validates them above 0.7, the analysis node approves
(or does not answer) and they score strictly better on the same messages replayed; the chat
follows them at its next message; instructions that make responses worse are rolled back."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopengine.store import autolearn, prompts
from loopengine.store.autolearn import MAX_TEXT
from loopengine.testing import FakeLLMServer, Response, answering, reply, status
from tests.skills._workspace import act_note, open_store, run_json, write_config

GRADE = re.compile(r"\[q=(\d+)\]")
BETTER = "Show a code example."


@dataclass
class World:
    """A1 answers at 4, at 9 under the better instructions (at 2 under ``worse``); OL1 grades
    the ``[q=N]`` it reads and validates proposals at ``validation``; M2 proposes
    ``proposal``; M1 votes ``vote``."""

    validation: str = "9"
    proposal: str = f"<prompt>{BETTER}</prompt>"
    vote: Response = field(default_factory=lambda: reply("APPROVE\nIt is general."))
    worse: str = "Answer in riddles."
    padding: int = 0
    """Characters of ``~`` after every answer of A1."""

    def answer(self, request: dict[str, Any]) -> Response:
        system = str(request["messages"][0]["content"])
        quality = 9 if BETTER in system else 2 if self.worse in system else 4
        return reply(f"An answer [q={quality}]" + "~" * self.padding)

    def grade(self, request: dict[str, Any]) -> Response:
        if str(request["messages"][0]["content"]).startswith("You grade a proposed change"):
            return reply(self.validation)
        found = GRADE.search(str(request["messages"][-1]["content"]))
        return reply(found.group(1) if found else "5")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """Chain OL1 → M1 (analysis) → M2 (review); A1 answers the chat; OL1 grades."""
    found = World()
    with FakeLLMServer() as server:
        server.script("a1", [answering(found.answer)])
        server.script("ol1", [answering(found.grade)])
        server.script("m2", [answering(lambda _: reply(found.proposal))])
        server.script("m1", [answering(lambda _: found.vote)])
        more = "  routing:\n    default: [A1]\nautolearn: {min_samples: 3}\n"
        write_config(tmp_path, server.base_url, ("OL1", "M1", "M2", "A1"), more)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
        monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
        found.server = server  # type: ignore[attr-defined]
        yield found


def _chat(capsys: pytest.CaptureFixture[str], count: int = 3) -> None:
    for _ in range(count):
        code, _ = run_json(capsys, "chat", "How do I read a file?", "--mode", "simple")
        assert code == 0


def _review(capsys: pytest.CaptureFixture[str]) -> str:
    code, record = run_json(capsys, "run", "autoreview")
    assert (code, record["outcome"]) == (0, "completed")
    return act_note(record)


def _requests(world: World, model: str) -> list[dict[str, Any]]:
    return world.server.requests_for(model)  # type: ignore[attr-defined,no-any-return]


def test_better_instructions_are_applied_and_the_next_message_follows_them(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat(capsys)
    note = _review(capsys)
    assert note.startswith("default: instructions v1 applied (applied: validation 0.9 > 0.7")
    _chat(capsys, 1)
    assert BETTER in _requests(world, "a1")[-1]["messages"][0]["content"]
    with open_store() as connection:
        [entry] = autolearn.history(connection)
        newest = autolearn.samples_in_window(connection, 50)[-1]
    assert (entry.kind, entry.detail["to"], newest.prompt_version) == ("prompt", 1, 1)
    assert entry.detail["baseline"] == 4.0  # the mean grade under the instructions replaced


def test_a_validation_of_0_7_is_not_enough_and_no_vote_is_asked(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.validation = "7"
    _chat(capsys)
    assert _review(capsys) == "validation 0.7 is not above 0.7"
    assert _requests(world, "m1") == []


def test_a_rejecting_vote_keeps_the_instructions(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.vote = reply("REJECT: too narrow")
    _chat(capsys)
    assert _review(capsys) == "the analysis node rejected it"
    with open_store() as connection:
        assert prompts.active(connection) == {}


def test_a_vote_that_fails_does_not_block_the_change(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.vote = status(500)
    _chat(capsys)
    assert "vote timeout" in _review(capsys)


def test_a_candidate_not_better_on_the_replayed_messages_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.proposal = "<prompt>Be polite.</prompt>"
    _chat(capsys)
    assert _review(capsys).startswith("replay not strictly better: 4.0 ≤ 4.0 on 3 inputs")


def test_the_grader_reads_at_most_max_text_characters_of_a_long_reply(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.padding = 50_000
    _chat(capsys)
    assert _review(capsys).startswith("default: instructions v1 applied")
    asked = [str(r["messages"][-1]["content"]) for r in _requests(world, "ol1")]
    graded = [text.count("~") for text in asked if text.startswith("Grade the answer")]
    assert len(graded) == 3 + 2 * 3  # the chats, then each replayed under both versions
    assert set(graded) == {MAX_TEXT - len("An answer [q=4]")}


def test_instructions_that_make_responses_worse_are_rolled_back(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat(capsys)
    run_json(capsys, "run", "autoreview")
    with open_store() as connection, connection.begin():
        prompts.add_version(
            connection, "default", world.worse, parent=1, baseline=9.0, reason="test",
            execution_id=None, now=0.0,
        )  # fmt: skip
    _chat(capsys)
    assert _review(capsys).startswith("rolled back default: v2 → v1 (mean")
    _chat(capsys, 1)
    system = _requests(world, "a1")[-1]["messages"][0]["content"]
    assert (BETTER in system, world.worse in system) == (True, False)
    _, history = run_json(capsys, "autolearn", "history")
    assert [entry["kind"] for entry in history["history"]][:1] == ["rollback"]


def test_a_dry_run_grades_nothing_and_changes_nothing(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat(capsys)
    code, record = run_json(capsys, "run", "autoreview", "--dry-run")
    assert (code, record["decision"]["action"]) == (0, "keep")
    with open_store() as connection:
        assert autolearn.count_ungraded(connection, 10) == 3
        assert prompts.active(connection) == {}
    assert _requests(world, "ol1") == []
