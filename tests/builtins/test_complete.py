"""``llm.complete`` against a scripted node on 127.0.0.1: routed by category, an answer held to
its JSON Schema with one retry, every answer bounded, tokens and calls counted."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import LLMRuntime, builtin_registry
from loopengine.builtins._complete import MAX_ANSWER, TRUNCATED, conforming
from loopengine.contract import Config, Outcome
from loopengine.errors import BudgetExceeded, SkillError
from loopengine.skills import Registry, SkillContext, SkillOutput
from loopengine.testing import FakeLLMServer, memory_store, reply
from tests.engine.conftest import open_harness

SEVERITY = {
    "type": "object",
    "properties": {"severity": {"enum": ["low", "high"]}},
    "required": ["severity"],
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


def _config(server: FakeLLMServer) -> Config:
    nodes = {
        name: {"base_url": server.base_url, "model": name.lower(), "timeout_s": 10}
        for name in ("A", "B")
    }
    return Config.model_validate({"cluster": {"nodes": nodes, "routing": {"triage": ["B"]}}})


@pytest.fixture
async def runtime(server: FakeLLMServer, tmp_path: Path) -> AsyncIterator[LLMRuntime]:
    async with memory_store() as store:
        built = LLMRuntime(_config(server), tmp_path, Registry(), store, {})
        yield built
        await built.aclose()


class Spent:
    """What a skill counted into the budget, and the reason it is spent once ``limit`` calls
    were made."""

    def __init__(self, limit: int | None = None) -> None:
        self.counted: list[tuple[int, int]] = []
        self.limit = limit

    def __call__(self, tokens: int, calls: int) -> str | None:
        self.counted.append((tokens, calls))
        made = sum(c for _, c in self.counted)
        return (
            "LLM-call budget of 1 spent" if self.limit is not None and made >= self.limit else None
        )


def _ctx(runtime: LLMRuntime, spent: Spent | None = None, *, dry_run: bool = False) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="triage",
        phase="analyze",
        step="severity",
        idempotency_key="e1:analyze:severity",
        llm_runtime=lambda: runtime,
        spend=spent or Spent(),
        dry_run=dry_run,
    )


async def _complete(ctx: SkillContext, **params: Any) -> dict[str, Any]:
    output = await builtin_registry().skill("llm.complete").fn(ctx, **params)
    assert isinstance(output, SkillOutput)
    completion: dict[str, Any] = output.data["completion"]
    return completion


def _said(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["messages"]]


@pytest.mark.anyio
async def test_a_text_answer_is_returned_and_counted(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply("Disk is nearly full.")])
    spent = Spent()
    answer = await _complete(_ctx(runtime, spent), prompt="Summarise.", system="Be brief.")
    assert (answer["text"], answer["node"], answer["truncated"]) == (
        "Disk is nearly full.",
        "A",
        False,
    )
    assert (answer["calls"], answer["tokens"], spent.counted) == (1, 15, [(15, 1)])
    [request] = server.requests
    assert _said(request) == [("system", "Be brief."), ("user", "Summarise.")]


@pytest.mark.anyio
async def test_the_category_routes_the_prompt_and_max_tokens_bounds_the_answer(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("b", [reply("ok")])
    answer = await _complete(_ctx(runtime), prompt="Triage.", category="triage", max_tokens=50)
    assert answer["node"] == "B"
    [request] = server.requests_for("b")
    assert request["max_tokens"] == 50


@pytest.mark.anyio
async def test_a_conforming_answer_is_read_as_json(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply('{"severity": "high"}')])
    answer = await _complete(_ctx(runtime), prompt="How bad?", schema=SEVERITY)
    assert (answer["json"], answer["calls"]) == ({"severity": "high"}, 1)
    [request] = server.requests
    assert json.dumps(SEVERITY) in request["messages"][0]["content"]


@pytest.mark.anyio
async def test_a_non_conforming_answer_is_asked_again_once(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply('{"severity": "dire"}'), reply('{"severity": "low"}')])
    spent = Spent()
    answer = await _complete(_ctx(runtime, spent), prompt="How bad?", schema=SEVERITY)
    assert (answer["json"], answer["calls"], answer["tokens"]) == ({"severity": "low"}, 2, 30)
    assert spent.counted == [(15, 1), (15, 1)]
    retry = _said(server.requests[1])
    assert retry[-2] == ("assistant", '{"severity": "dire"}')
    assert retry[-1][0] == "user"
    assert "severity: 'dire' is not one of ['low', 'high']" in retry[-1][1]


@pytest.mark.anyio
async def test_an_answer_non_conforming_twice_fails_the_step_saying_why(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply("It is bad."), reply('{"level": 3}'), reply('{"severity": "low"}')])
    with pytest.raises(
        SkillError, match="did not conform to the schema, twice: the answer: 'severity' is a"
    ):
        await _complete(_ctx(runtime), prompt="How bad?", schema=SEVERITY)
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_no_retry_once_the_budget_is_spent(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply("It is bad."), reply('{"severity": "low"}')])
    with pytest.raises(BudgetExceeded, match="LLM-call budget of 1 spent"):
        await _complete(_ctx(runtime, Spent(limit=1)), prompt="How bad?", schema=SEVERITY)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_an_over_long_text_answer_is_cut_with_a_marker(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    server.script("a", [reply("x" * (4 * MAX_ANSWER))])
    answer = await _complete(_ctx(runtime), prompt="Talk.")
    assert answer["text"] == "x" * MAX_ANSWER + TRUNCATED
    assert answer["truncated"] is True


@pytest.mark.anyio
async def test_an_over_long_json_answer_is_refused_not_read(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    huge = json.dumps({"severity": "low", "pad": "x" * (4 * MAX_ANSWER)})
    server.script("a", [reply(huge), reply(huge)])
    with pytest.raises(SkillError, match=f"over {MAX_ANSWER} characters"):
        await _complete(_ctx(runtime), prompt="How bad?", schema=SEVERITY)


@pytest.mark.anyio
async def test_a_dry_run_asks_nothing_and_says_what_it_would_ask(
    server: FakeLLMServer, runtime: LLMRuntime
) -> None:
    answer = await _complete(_ctx(runtime, dry_run=True), prompt="How bad?", schema=SEVERITY)
    assert answer == {
        "category": "default",
        "prompt": "How bad?",
        "system": None,
        "schema": SEVERITY,
        "dry_run": True,
    }
    assert server.requests == []


def test_a_schema_that_is_not_one_is_refused_at_validate() -> None:
    problems = (
        builtin_registry()
        .skill("llm.complete")
        .check_params({"prompt": "p", "schema": {"type": "severity"}}, frozenset())
    )
    assert ["not a valid JSON Schema" in p.message for p in problems] == [True]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("It is bad.", "the answer is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "over 65536 characters"),
        ("[" * 20_000 + "]" * 20_000, "nested more than 32 levels"),
        ('{"severity": NaN}', "NaN is not a finite number"),
        ('{"severity": "dire"}', "severity: 'dire' is not one of"),
        ("{}", "the answer: 'severity' is a required property"),
    ],
    ids=["prose", "too-long", "too-deep", "non-finite", "refused-value", "missing"],
)
def test_a_non_conforming_answer_is_refused_with_why(text: str, problem: str) -> None:
    value, said = conforming(text, SEVERITY)
    assert value is None
    assert said is not None
    assert problem in said


def test_an_answer_in_a_code_fence_is_read() -> None:
    assert conforming('```json\n{"severity": "low"}\n```', SEVERITY) == ({"severity": "low"}, None)


TRIAGE = """\
id: triage
trigger: {type: manual}
budget: {llm_calls: 5}
analyze:
  analysis_steps:
    - name: severity
      skill_id: llm.complete
      params:
        prompt: "Disk at 97%. How bad?"
        category: triage
        schema: {type: object, properties: {severity: {enum: [low, high]}}, required: [severity]}
decide:
  decision_tree:
    - {condition: "analysis.severity.completion.json.severity == 'high'", action: escalate}
  fallback_action: log_only
act:
  actions:
    - {action_id: escalate, skill_id: log_only, params: {message: "severity high"}}
"""


@pytest.mark.anyio
async def test_an_analyze_step_decides_on_the_answer_and_the_budget_counts_it(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.script("b", [reply("high, surely"), reply('{"severity": "high"}')])
    async with open_harness(tmp_path, builtin_registry(), _config(server)) as harness:
        done = await harness.engine.run(harness.loop(TRIAGE))
        assert done.outcome is Outcome.COMPLETED
        view = await harness.view(done)
    assert view["decision"]["action"] == "escalate"
    assert view["analysis"]["severity"]["completion"]["json"] == {"severity": "high"}
    assert view["usage"] == {"tokens": 30, "llm_calls": 2}


ANNOUNCE = """\
id: announce
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: draft}
act:
  dry_run_first: true
  actions:
    - {action_id: draft, skill_id: llm.complete, params: {prompt: "Draft a notice.", max_tokens: 64}}
"""


@pytest.mark.anyio
async def test_an_action_asks_once_its_dry_run_having_asked_nothing(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.script("a", [reply("Maintenance at noon.")])
    async with open_harness(tmp_path, builtin_registry(), _config(server)) as harness:
        done = await harness.engine.run(harness.loop(ANNOUNCE))
        view = await harness.view(done)
    assert done.outcome is Outcome.COMPLETED
    [dry, real] = harness.phase(view, "act")["data"]["calls"]
    assert dry["result"]["completion"]["dry_run"] is True
    assert real["result"]["completion"]["text"] == "Maintenance at noon."
    assert len(server.requests) == 1
