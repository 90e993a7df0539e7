"""Built-in LLM skills as the engine calls them: threads per session, re-runs of a step."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import LLMRuntime, builtin_registry
from loopengine.builtins._llm import Usage
from loopengine.contract import Config
from loopengine.errors import BudgetExceeded
from loopengine.skills import Registry, SkillContext, SkillOutput
from loopengine.store import Store, threads
from loopengine.testing import FakeLLMServer, reply, tool_call
from tests.builtins.test_complete import Spent

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


@pytest.fixture
async def runtime(server: FakeLLMServer, tmp_path: Path) -> AsyncIterator[LLMRuntime]:
    (tmp_path / "facts.txt").write_text("Loops have seven phases.")
    node = {"base_url": server.base_url, "model": "ol1", "timeout_s": 5}
    config = Config.model_validate({"cluster": {"nodes": {"OL1": node}}})
    async with Store.open(f"sqlite:///{tmp_path / 'chat.db'}") as store:
        built = LLMRuntime(config, tmp_path, Registry(), store, {})
        yield built
        await built.aclose()


def _ctx(runtime: LLMRuntime, execution: str = "e1", spent: Spent | None = None) -> SkillContext:
    return SkillContext(
        execution_id=execution,
        loop_id="reflexive_chat",
        phase="act",
        step="answer",
        idempotency_key=f"{execution}:act:answer",
        llm_runtime=lambda: runtime,
        spend=spent,
    )


def _commit(connection: Any, output: SkillOutput) -> None:
    for effect in output.effects:
        effect.apply(connection)


async def _agent(ctx: SkillContext, *, committed: bool = True, **params: Any) -> Any:
    """The skill's output, its writes committed as its step's commit would, unless not
    ``committed`` (the process died before)."""
    output: SkillOutput = await builtin_registry().skill("llm.agent").fn(ctx, **params)
    if committed:
        runtime = ctx.llm
        await runtime.store.write(_commit, output)
    return output


async def _thread(runtime: LLMRuntime, session: str) -> list[dict[str, Any]]:
    assert runtime.store is not None
    return [m.as_json() for m in await runtime.store.read(threads.load_thread, session)]


async def test_a_step_run_again_stores_the_message_once_and_the_reply_of_the_run_kept(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script(
        "ol1",
        [
            tool_call("list_dir", {"path": "."}),
            reply("First run."),
            tool_call("read_file", {"path": "facts.txt"}),
            reply("Second run."),
        ],
    )
    await _agent(_ctx(runtime), message="What is here?", session="s1", committed=False)
    again = await _agent(_ctx(runtime), message="What is here?", session="s1")
    assert again.data["chat"]["reply"] == "Second run."
    thread = await _thread(runtime, "s1")
    assert (thread[0]["role"], thread[0]["content"]) == ("user", "What is here?")
    assert [m["content"] for m in thread if m["role"] == "user"] == ["What is here?"]
    assert [m["content"] for m in thread if m["role"] == "assistant" and m["content"]] == [
        "Second run."
    ]


async def test_a_session_continues_where_it_was(server: FakeLLMServer, runtime: LLMRuntime) -> None:
    server.script("ol1", [reply("Seven."), reply("Detect first.")])
    await _agent(_ctx(runtime), message="How many phases?", session="s1")
    await _agent(_ctx(runtime, "e2"), message="Which comes first?", session="s1")
    sent = server.requests_for("ol1")[1]["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "How many phases?",
        "Seven.",
        "Which comes first?",
    ]


async def test_an_agents_model_calls_are_counted_into_the_budget_and_its_metrics(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("ol1", [tool_call("list_dir", {"path": "."}), reply("Facts.")])
    spent = Spent()
    output = await _agent(_ctx(runtime, spent=spent), message="What is here?", session="s1")
    assert [counted for counted in spent.counted if counted != (0, 0)] == [(15, 1), (15, 1)]
    assert output.metrics == {"llm.tokens": 30.0, "llm.calls": 2.0}


def test_usage_counts_a_call_as_it_starts_its_tokens_as_it_ends_and_refuses_one_once_spent() -> (
    None
):
    spent = Spent(limit=1)
    ctx = SkillContext("e1", "qa", "analyze", "answer", "e1:analyze:answer", spend=spent)
    usage = Usage(ctx, "rag.answer")
    usage.start()
    usage.ended(15)
    with pytest.raises(BudgetExceeded) as caught:
        usage.start()
    assert str(caught.value) == "rag.answer: LLM-call budget of 1 spent after 1 model calls"
    assert spent.counted == [(0, 1), (15, 0)]
    assert usage.metrics == {"llm.tokens": 15.0, "llm.calls": 1.0}


def test_usage_tells_what_a_spent_budget_stops() -> None:
    ctx = SkillContext("e1", "t", "analyze", "ask", "e1:analyze:ask", spend=Spent(limit=1))
    usage = Usage(ctx, "llm.complete")
    assert usage.spend(15, 1) == "LLM-call budget of 1 spent"
    with pytest.raises(
        BudgetExceeded, match=r"^llm.complete: LLM-call budget of 1 spent before a retry$"
    ):
        usage.check("before a retry")
