"""The shipped memory loop as users run it: the chat keeps each user's exchanges; the loop
detects their profile and, every ten exchanges, has the analysis node (else the research node)
write a deep summary; the chat's next message carries both in its system prompt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loopengine.cli import main
from loopengine.store import memory
from loopengine.testing import FakeLLMServer, reply, status
from tests.skills._workspace import act_note, open_store, run_json, write_config

FRENCH = "Comment est-ce que je configure le pool de connexions postgres dans mon service docker ?"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """Chain OL1 (research) → M1 (analysis) → M2; simple mode answers with M2."""
    with FakeLLMServer() as running:
        more = "  routing:\n    default: [M2]\nautolearn: {summary_every: 10, memory_keep: 20}\n"
        write_config(tmp_path, running.base_url, ("OL1", "M1", "M2"), more)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
        monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
        yield running


def _chat(capsys: pytest.CaptureFixture[str], count: int, user: str = "ada") -> None:
    for _ in range(count):
        code, _ = run_json(capsys, "chat", FRENCH, "--mode", "simple", "--user", user)
        assert code == 0


def _summarized(server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Ten exchanges of ada, a memory cycle that summarizes them, and one more reply to come."""
    server.script("m2", [reply("Avec pool_size.")] * 11)
    server.script("m1", [reply("Ada runs postgres in docker.")])
    _chat(capsys, 10)
    run_json(capsys, "run", "memory")


def test_each_exchange_is_kept_for_its_user_and_rotated(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("m2", [reply("Avec pool_size.")] * 25)
    _chat(capsys, 25)
    with open_store() as connection:
        kept = memory.exchanges(connection, "ada", 100)
        row = memory.profile(connection, "ada")
    assert (len(kept), kept[-1].reply) == (20, "Avec pool_size.")
    assert row is not None
    assert row.exchanges == 25


def test_the_loop_profiles_users_and_the_analysis_node_summarizes(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("m2", [reply("Avec pool_size.")] * 10)
    server.script("m1", [reply("Ada runs postgres in docker and tunes its pools.")])
    _chat(capsys, 10)
    code, record = run_json(capsys, "run", "memory")
    assert (code, act_note(record)) == (0, "1 deep summary written")
    code, view = run_json(capsys, "autolearn", "memory", "--user", "ada")
    [ada] = view["users"]
    assert (ada["profile"]["language"], ada["summary_node"]) == ("fr", "M1")
    assert "postgres" in ada["profile"]["topics"]


def test_the_research_node_summarizes_when_the_analysis_node_fails(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("m2", [reply("Avec pool_size.")] * 10)
    server.script("m1", [status(500)] * 3)
    server.script("ol1", [reply("Ada runs postgres in docker.")])
    _chat(capsys, 10)
    run_json(capsys, "run", "memory")
    _, view = run_json(capsys, "autolearn", "memory", "--user", "ada")
    assert view["users"][0]["summary_node"] == "OL1"


def test_the_next_message_carries_the_profile_and_the_summary(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _summarized(server, capsys)
    _chat(capsys, 1)
    system = server.requests_for("m2")[-1]["messages"][0]["content"]
    assert "Ada runs postgres in docker." in system
    assert "(fr)" in system


def test_another_users_memory_is_not_shown(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _summarized(server, capsys)
    _chat(capsys, 1, user="bob")
    system = server.requests_for("m2")[-1]["messages"][0]["content"]
    assert "Ada" not in system
    assert "What you know about this user" not in system


def test_the_memory_command_reads_without_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    assert main(["autolearn", "memory"]) == 2
    assert "error: no store at " in capsys.readouterr().err
    assert not (tmp_path / ".loopengine").exists()


def test_a_dry_run_profiles_and_summarizes_nobody(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script("m2", [reply("Avec pool_size.")] * 10)
    _chat(capsys, 10)
    code, record = run_json(capsys, "run", "memory", "--dry-run")
    assert (code, record["decision"]["action"]) == (0, "summarize")
    with open_store() as connection:
        row = memory.profile(connection, "ada")
    assert row is not None
    assert (row.profile, row.summary) == (None, None)
    assert server.requests_for("m1") == []


@pytest.mark.parametrize("user", ["a b", "a/b", "u" * 201])
def test_a_user_name_that_could_not_be_read_back_is_refused(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], user: str
) -> None:
    assert main(["chat", "Hi", "--mode", "simple", "--user", user]) != 0
    assert "user" in capsys.readouterr().err
