"""The agent loop and the reflexive chain against a scripted server, as the issue's scenarios."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_tools
from loopengine.contract import Cluster as ClusterConfig
from loopengine.errors import LLMError
from loopengine.llm import Cluster, Hooks, Toolbox, chain_stages, run_chain, run_simple
from loopengine.testing import FakeLLMServer, forever, reply, tool_call

pytestmark = pytest.mark.anyio
QUESTION = [{"role": "user", "content": "Analyse the facts file and explain it"}]


def _config(server: FakeLLMServer, offline: frozenset[str] = frozenset()) -> ClusterConfig:
    nodes: dict[str, Any] = {}
    for name in ("OL1", "M1", "M2"):
        url = "http://127.0.0.1:9/v1" if name in offline else server.base_url
        nodes[name] = {"base_url": url, "model": name.lower(), "timeout_s": 5}
    return ClusterConfig.model_validate({"nodes": nodes, "routing": {"simple": ["OL1", "M1"]}})


@pytest.fixture
async def cluster(server: FakeLLMServer) -> AsyncIterator[Cluster]:
    built = Cluster(_config(server), {})
    yield built
    await built.aclose()


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    (tmp_path / "facts.txt").write_text("Loops have seven phases.")
    return Toolbox(builtin_tools(tmp_path, "sqlite://"))


async def test_a_model_repeating_list_dir_is_stopped_and_the_chain_still_answers(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script("ol1", [forever(tool_call("list_dir", {"path": "."}))])
    server.script("m1", [reply("The folder holds facts.txt.")])
    server.script("m2", [reply("Final: the folder holds facts.txt.")])
    result = await run_chain(cluster, QUESTION, toolbox)
    first = result.stages[0]
    assert (first.status, first.turns) == ("loop_stopped", 2)
    assert first.reason == 'list_dir({"path": "."}) was already called in this stage'
    assert len(first.tools_used) == 1
    assert result.reply == "Final: the folder holds facts.txt."
    assert [s.status for s in result.stages] == ["loop_stopped", "ok", "ok"]


async def test_a_forgotten_argument_is_fed_back_and_the_retry_succeeds(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1",
        [
            tool_call("read_file", {}),
            tool_call("read_file", {"path": "facts.txt"}),
            reply("Seven phases."),
        ],
    )
    result = await run_simple(cluster, QUESTION, toolbox, "simple")
    used = result.stages[0].tools_used
    assert [u["ok"] for u in used] == [False, True]
    assert used[0]["error"] == "invalid arguments for read_file: missing required argument 'path'"
    second_request = server.requests_for("ol1")[1]["messages"]
    assert "missing required argument 'path'" in second_request[-1]["content"]
    assert result.reply == "Seven phases."


async def test_the_seed_bracket_syntax_reads_the_file(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1",
        [
            reply('[TOOL:read_file:{"path": "facts.txt"}]'),
            reply("It says loops have seven phases."),
        ],
    )
    result = await run_simple(cluster, QUESTION, toolbox, "simple")
    (used,) = result.stages[0].tools_used
    assert used["result"]["text"] == "Loops have seven phases."
    assert result.reply == "It says loops have seven phases."


async def test_an_unknown_tool_is_reported_to_the_model(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1", [tool_call("move_file", {"from": "a", "to": "b"}), reply("I cannot move files.")]
    )
    result = await run_simple(cluster, QUESTION, toolbox, "simple")
    (used,) = result.stages[0].tools_used
    assert used["error"].startswith("unknown tool 'move_file'")
    assert result.reply == "I cannot move files."
    assert result.stages[0].status == "ok"


async def test_an_offline_m1_is_skipped_and_m2_reviews_ol1(
    server: FakeLLMServer, toolbox: Toolbox
) -> None:
    cluster = Cluster(_config(server, offline=frozenset({"M1"})), {})
    cluster.client("M1").retries = 0
    try:
        server.script(
            "ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("Found: seven phases.")]
        )
        server.script("m2", [reply("Reviewed: loops have seven phases.")])
        result = await run_chain(cluster, QUESTION, toolbox)
    finally:
        await cluster.aclose()
    assert [(s.node, s.status) for s in result.stages] == [
        ("OL1", "ok"),
        ("M1", "skipped"),
        ("M2", "ok"),
    ]
    assert "unreachable" in (result.stages[1].reason or "")
    assert result.reply == "Reviewed: loops have seven phases."
    review = server.requests_for("m2")[0]["messages"]
    assert "Loops have seven phases." in review[-1]["content"]


async def test_a_simple_question_uses_one_node(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script("ol1", [reply("Paris.")])
    result = await run_simple(
        cluster, [{"role": "user", "content": "Capital of France?"}], toolbox, "simple"
    )
    assert (result.mode, [s.node for s in result.stages], result.reply) == (
        "simple",
        ["OL1"],
        "Paris.",
    )
    assert server.requests_for("m1") == []


async def test_a_single_node_stopped_for_repeating_itself_still_answers(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1",
        [
            tool_call("list_dir", {"path": "."}),
            tool_call("list_dir", {"path": "."}),
            reply("The folder holds facts.txt."),
        ],
    )
    result = await run_simple(cluster, QUESTION, toolbox, "simple")
    (stage,) = result.stages
    assert (stage.status, stage.turns) == ("loop_stopped", 2)
    assert result.reply == "The folder holds facts.txt."
    last = server.requests_for("ol1")[-1]
    assert "tools" not in last
    assert "repeated a tool call" in last["messages"][-1]["content"]


async def test_a_streaming_node_runs_the_same_agent_loop(
    server: FakeLLMServer, toolbox: Toolbox
) -> None:
    config = ClusterConfig.model_validate(
        {"nodes": {"OL1": {"base_url": server.base_url, "model": "ol1", "stream": True}}}
    )
    server.script("ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("Seven phases.")])
    cluster = Cluster(config, {})
    try:
        result = await run_simple(cluster, QUESTION, toolbox, None)
    finally:
        await cluster.aclose()
    assert result.reply == "Seven phases."
    assert result.tools_used[0]["result"]["text"] == "Loops have seven phases."
    assert all(request["stream"] for request in server.requests_for("ol1"))


async def test_out_of_turns_hands_back_a_partial_answer(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1",
        [
            tool_call("read_file", {"path": "facts.txt"}),
            tool_call("list_dir", {"path": "."}),
            reply("Partial: seven phases."),
        ],
    )
    result = await run_simple(cluster, QUESTION, toolbox, "simple", max_turns=2)
    stage = result.stages[0]
    assert (stage.status, stage.partial, result.reply) == ("budget", True, "Partial: seven phases.")
    assert "tools" not in server.requests_for("ol1")[-1]


async def test_the_chain_respects_its_global_turn_budget(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script(
        "ol1",
        [
            tool_call("list_dir", {"path": "."}),
            tool_call("read_file", {"path": "facts.txt"}),
            tool_call("search_files", {"pattern": "phase"}),
            tool_call("list_dir", {"path": ".."}),
            reply("ol1 done"),
        ],
    )
    server.script("m1", [reply("m1 done")])
    server.script("m2", [reply("m2 done")])
    result = await run_chain(cluster, QUESTION, toolbox, max_turns=5)
    assert result.turns <= 5 + 1
    assert [s.status for s in result.stages][-1] in ("ok", "skipped")


async def test_a_context_overflow_is_not_an_empty_answer(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    server.script("ol1", [reply("", finish_reason="length")])
    result = await run_simple(cluster, QUESTION, toolbox, "simple")
    assert result.stages[0].status == "failed"
    assert "context overflow" in (result.stages[0].reason or "")


async def test_repeated_failures_cool_a_node_down(server: FakeLLMServer, toolbox: Toolbox) -> None:
    from loopengine.errors import LLMError

    cluster = Cluster(_config(server, offline=frozenset({"OL1"})), {})
    cluster.client("OL1").retries = 0
    try:
        for _ in range(3):
            with pytest.raises(LLMError):
                await cluster.chat("OL1", [])
        assert cluster.available("OL1") is not None
        assert cluster.pick("simple") == "M1"
    finally:
        await cluster.aclose()


async def test_node_health_survives_a_restart(server: FakeLLMServer, tmp_path: Path) -> None:
    from loopengine.builtins import LLMRuntime
    from loopengine.contract import Config
    from loopengine.errors import LLMError
    from loopengine.skills import Registry
    from loopengine.store import Store, health

    config = Config.model_validate(
        {"cluster": _config(server, offline=frozenset({"OL1"})).model_dump()}
    )
    async with Store.open(f"sqlite:///{tmp_path / 'health.db'}") as store:
        first = LLMRuntime(config, tmp_path, Registry(), store, {})
        first.cluster.client("OL1").retries = 0
        for _ in range(3):
            with pytest.raises(LLMError):
                await first.cluster.chat("OL1", [])
        await store.write(health.save_health, first.health_rows())
        await first.aclose()
        second = LLMRuntime(config, tmp_path, Registry(), store, {})
        await second.prepare("default", None, "s1", "s1:user")
        assert second.cluster.available("OL1") is not None
        await second.aclose()


async def test_a_spent_budget_stops_the_chain_with_what_it_gathered(
    server: FakeLLMServer, cluster: Cluster, toolbox: Toolbox
) -> None:
    used = {"tokens": 0}

    def spend(tokens: int, calls: int) -> str | None:
        used["tokens"] += tokens
        return "token budget of 20 spent" if used["tokens"] >= 20 else None

    server.script(
        "ol1", [tool_call("read_file", {"path": "facts.txt"}), tool_call("list_dir", {"path": "."})]
    )
    result = await run_chain(cluster, QUESTION, toolbox, hooks=Hooks(spend=spend))
    first, *rest = result.stages
    assert (first.status, first.reason, first.turns) == ("budget", "token budget of 20 spent", 2)
    assert [s.status for s in rest] == ["skipped", "skipped"]
    assert [u["name"] for u in result.tools_used] == ["read_file", "list_dir"]
    assert server.requests_for("m1") == []


def test_the_chain_takes_its_stages_from_any_node_names() -> None:
    stages = chain_stages(["fast", "mid", "deep", "judge"])
    assert [(s.node, s.role, s.max_turns) for s in stages] == [
        ("fast", "research", 4),
        ("mid", "analysis", 3),
        ("deep", "analysis", 3),
        ("judge", "review", 2),
    ]


def test_a_chain_of_one_node_answers_alone() -> None:
    (stage,) = chain_stages(["only"])
    assert (stage.node, stage.role, stage.answer_after_stop) == ("only", "answer", True)


async def test_a_node_secret_is_needed_only_when_that_node_is_called() -> None:
    config = ClusterConfig.model_validate(
        {
            "nodes": {
                "OL1": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
                "M2": {
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "m",
                    "api_key": "${ secret.M2_KEY }",
                },
            }
        }
    )
    cluster = Cluster(config, {})
    try:
        assert cluster.client("OL1").name == "OL1"
        with pytest.raises(LLMError, match="node M2: its api_key cannot be resolved"):
            cluster.client("M2")
    finally:
        await cluster.aclose()


async def test_a_tuned_order_leaves_out_removed_nodes_and_is_followed_by_new_ones(
    cluster: Cluster,
) -> None:
    assert cluster.route("simple", {"simple": ["M1", "GONE"]}) == ["M1", "OL1"]


async def test_each_message_picks_with_its_own_tuned_order_and_exploration(
    cluster: Cluster,
) -> None:
    tuned = {"simple": ["M1", "OL1"]}
    assert cluster.pick("simple", tuned) == "M1"
    assert cluster.pick("simple", tuned, explore=lambda available: available[-1]) == "OL1"
    assert cluster.pick("simple") == "OL1"
