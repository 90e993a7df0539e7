"""The shipped autotune loop as users run it: on a fresh install it says no cluster is configured,
and with one but no responses yet 'not enough samples'; with scored chat responses it reorders a category's routing once a node earns it (and
not again while nothing changes); the chat follows the tuned order at its next message."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.autolearn import MAX_ANALYSIS
from loopengine.cli import main
from loopengine.store import autolearn, executions, memory, migrate
from loopengine.testing import FakeLLMServer, raw, reply, status
from tests.conftest import ROOT
from tests.skills._workspace import act_note, open_store, run_json, write_config


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """A workspace whose cluster (OL1, M1) is one scripted server; its routing puts OL1 first."""
    with FakeLLMServer() as running:
        more = "  routing:\n    default: [OL1, M1]\nautolearn: {min_samples: 3, margin: 0.5}\n"
        write_config(tmp_path, running.base_url, ("OL1", "M1"), more)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
        monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
        yield running


def _sample(node: str, seconds: float, quality: float) -> dict[str, Any]:
    return {
        "execution_id": "e" * 32,
        "session_id": None,
        "node": node,
        "category": "default",
        "mode": "simple",
        "seconds": seconds,
        "output_tokens": 0,
        "success": True,
        "message": "hi",
        "reply": "hello",
        "quality": quality,
        "graded_at": 0.0,
        "created_at": 0.0,
    }


def _record(samples: list[dict[str, Any]]) -> None:
    with open_store() as connection, connection.begin():
        migrate(connection)
        autolearn.insert_samples(connection, samples)


NO_CLUSTER = (
    "no cluster is configured: add the chat's nodes under `cluster: nodes:` in loopengine.yaml"
)


@pytest.mark.parametrize(
    ("loop", "note"),
    [
        ("autotune", NO_CLUSTER),
        (str(ROOT / "loops" / "autotune.yaml"), NO_CLUSTER),
        ("autoreview", NO_CLUSTER),
        (str(ROOT / "loops" / "autoreview.yaml"), NO_CLUSTER),
        ("memory", "not enough samples (0/10) for a deep summary"),
        (str(ROOT / "loops" / "memory.yaml"), "not enough samples (0/10) for a deep summary"),
    ],
)
def test_a_fresh_install_says_what_it_lacks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    loop: str,
    note: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    code, record = run_json(capsys, "run", loop)
    assert (code, record["outcome"]) == (0, "completed")
    assert act_note(record) == note


@pytest.mark.parametrize("loop", ["autotune", "autoreview"])
def test_with_a_cluster_and_no_samples_there_are_not_enough_samples(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], loop: str
) -> None:
    code, record = run_json(capsys, "run", loop)
    assert (code, record["outcome"]) == (0, "completed")
    assert act_note(record) == "not enough samples (0/3)"


def test_a_node_that_earns_it_moves_up_once(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    code, record = run_json(capsys, "run", "autotune")
    assert (code, record["decision"]["action"]) == (0, "reorder")
    assert act_note(record) == "routing reordered (default: M1, OL1)"
    with open_store() as connection:
        assert autolearn.routing(connection)["default"].nodes == ["M1", "OL1"]
        assert [entry.kind for entry in autolearn.history(connection)] == ["routing"]
    _, again = run_json(capsys, "run", "autotune")
    assert act_note(again).startswith("routing unchanged")


def test_the_chat_follows_the_tuned_order_and_records_its_response(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    run_json(capsys, "run", "autotune")
    server.script("m1", [reply("Paris.")])
    code, answer = run_json(capsys, "chat", "Capital of France?", "--mode", "simple")
    assert (code, [stage["node"] for stage in answer["chain"]]) == (0, ["M1"])
    with open_store() as connection:
        newest = autolearn.samples_in_window(connection, 50)[-1]
    assert (newest.node, newest.reply, newest.success) == ("M1", "Paris.", True)


def test_a_dry_run_feeds_no_sample_and_no_memory(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "asks.yaml").write_text(
        "id: asks\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: ask, skill_id: llm.agent, params: {message: 'Capital?', user: ada}}\n"
    )
    server.script("ol1", [reply("Paris.")])
    code, record = run_json(capsys, "run", "asks.yaml", "--dry-run")
    assert (code, record["outcome"]) == (0, "dry_run")
    with open_store() as connection:
        assert autolearn.samples_in_window(connection, 50) == []
        assert memory.exchanges(connection, "ada", 10) == []


def test_scores_json_has_each_category_and_the_routing_followed(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    run_json(capsys, "run", "autotune")
    code, view = run_json(capsys, "autolearn", "scores")
    assert code == 0
    assert view["routing"] == {"default": {"nodes": ["M1", "OL1"], "order": "tuned"}}
    [best, worst] = view["categories"]["default"]
    assert set(best) == {"node", "score", "speed", "quality", "reliability", "samples"}
    assert (best["node"], best["samples"], worst["node"]) == ("M1", 3, "OL1")


def test_scores_mark_whether_each_category_follows_its_tuned_or_configured_order(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    more = "  routing:\n    default: [OL1, M1]\n    code: [M1]\nautolearn: {min_samples: 3}\n"
    write_config(tmp_path, server.base_url, ("OL1", "M1"), more)
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    run_json(capsys, "run", "autotune")
    assert main(["autolearn", "scores"]) == 0
    routing = [line for line in capsys.readouterr().out.splitlines() if line.startswith("routing")]
    assert routing == ["routing default: M1, OL1 (tuned)", "routing code: M1 (configured)"]


def test_status_and_history_say_what_changed(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    run_json(capsys, "run", "autotune")
    _, status = run_json(capsys, "autolearn", "status")
    assert (status["samples"], status["graded"]) == (6, 6)
    assert status["tuned"]["default"]["nodes"] == ["M1", "OL1"]
    assert status["loops"]["autotune"]["outcome"] == "completed"
    _, history = run_json(capsys, "autolearn", "history")
    assert [entry["kind"] for entry in history["history"]] == ["routing"]


def test_before_anything_was_learned_status_shows_nothing(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([])
    _, status = run_json(capsys, "autolearn", "status")
    assert status == {
        "samples": 0,
        "graded": 0,
        "tuned": {},
        "prompts": {},
        "memory": {"users": 0, "summarized": 0},
        "loops": {"autotune": None, "autoreview": None, "memory": None},
    }


def _ungraded(node: str) -> dict[str, Any]:
    return {**_sample(node, 1.0, 0.0), "quality": None, "graded_at": None}


def test_the_grader_grades_each_new_response_once_newest_first(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_ungraded("M1"), _ungraded("M1")])
    server.script("ol1", [reply("8/10"), reply('{"score": 6}')])
    code, _ = run_json(capsys, "run", "autotune")
    assert code == 0
    with open_store() as connection:
        qualities = [s.quality for s in autolearn.samples_in_window(connection, 50)]
    assert qualities == [6.0, 8.0]
    run_json(capsys, "run", "autotune")
    assert len(server.requests_for("ol1")) == 2


def test_a_grader_that_fails_leaves_the_response_ungraded_for_good(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_ungraded("M1")])
    server.script("ol1", [reply("a fine answer, I would say")])
    code, _ = run_json(capsys, "run", "autotune")
    assert code == 0
    with open_store() as connection:
        [sample] = autolearn.samples_in_window(connection, 50)
        assert autolearn.claim_ungraded(connection, 10, now=0.0, until=1.0) == []
    assert sample.quality is None


def test_a_grade_after_thinking_is_read_and_a_null_message_is_no_grade(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_ungraded("M1"), _ungraded("M1")])
    null = raw({"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]})
    server.script("ol1", [null, reply("<think>terse but right</think>7")])
    code, _ = run_json(capsys, "run", "autotune")
    assert code == 0
    with open_store() as connection:
        qualities = [s.quality for s in autolearn.samples_in_window(connection, 50)]
    assert qualities == [7.0, None]


def test_the_chain_scores_the_reply_the_user_got(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    more = "  chain: [OL1, M1, M2]\n"
    write_config(tmp_path, server.base_url, ("OL1", "M1", "M2"), more)
    server.script("ol1", [reply("Found: Paris.")])
    server.script("m1", [status(500)] * 5)
    server.script("m2", [reply("Paris.")])
    code, _ = run_json(capsys, "chat", "Capital of France?", "--mode", "reflexive")
    assert code == 0
    with open_store() as connection:
        samples = autolearn.samples_in_window(connection, 50)
    assert [(s.node, s.success, s.graded_at) for s in samples] == [("M2", True, None)]


def _a_cycle_then_a_drop(capsys: pytest.CaptureFixture[str]) -> None:
    """A tuning cycle that keeps its scores, then M1's new responses graded 3."""
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    run_json(capsys, "run", "autotune")
    _record([_sample("M1", 1.0, 3.0)] * 3)


def test_a_cycle_keeps_its_scores_and_the_next_asks_the_analysis_node_about_the_trend(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _a_cycle_then_a_drop(capsys)
    server.script("m1", [reply("M1 is getting worse.")])
    _, record = run_json(capsys, "run", "autotune")
    with open_store() as connection:
        row = executions.get_execution(connection, record["execution_id"])
    assert row is not None
    said = row.context["data"]["trend_analysis"]
    assert (said["status"], said["text"]) == ("ok", "M1 is getting worse.")


def test_an_analysis_node_that_fails_does_not_stop_the_cycle(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _a_cycle_then_a_drop(capsys)
    server.script("m1", [status(500)] * 5)
    code, record = run_json(capsys, "run", "autotune")
    assert (code, record["outcome"]) == (0, "completed")


def test_a_dry_run_that_would_reorder_writes_nothing(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _record([_sample("OL1", 12.0, 3.0)] * 3 + [_sample("M1", 1.0, 9.0)] * 3)
    code, record = run_json(capsys, "run", "autotune", "--dry-run")
    assert (code, record["outcome"], record["decision"]["action"]) == (0, "dry_run", "reorder")
    with open_store() as connection:
        assert autolearn.routing(connection) == {}


def test_an_analysis_node_that_says_too_much_is_cut(
    server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _a_cycle_then_a_drop(capsys)
    server.script("m1", [reply("worse " * 200_000)])
    _, record = run_json(capsys, "run", "autotune")
    with open_store() as connection:
        row = executions.get_execution(connection, record["execution_id"])
    assert row is not None
    assert len(row.context["data"]["trend_analysis"]["text"]) == MAX_ANALYSIS
