"""A small knowledge base (a hub and its sensors), the config that grades it with node J (model
``judge``) and answers from it with node W (``writer``), a grader scripted by keyword, and the
knowledge skills called on it as the engine calls them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine.builtins import LLMRuntime, builtin_registry
from loopengine.contract import Config
from loopengine.knowledge import index
from loopengine.skills import Registry, SkillContext, SkillOutput
from loopengine.store import Store
from loopengine.testing import Answering, FakeLLMServer, Response, answering, reply
from tests.builtins.test_complete import Spent

KB = {
    "kb/hub.md": "# Hub\n\n## Factory reset\n\nHold the pairing button for ten seconds, until "
    "the ring light turns amber.\n\n## Pairing\n\nPress the pairing button once: the ring light "
    "blinks blue.\n",
    "kb/sensors.md": "# Sensors\n\n## Batteries\n\nEach door sensor's battery is one CR2032 coin "
    "cell.\n\n## Lifetime\n\nA full charge keeps a sensor running for eighteen months.\n",
}


def _passage(request: dict[str, Any]) -> str:
    said = request["messages"][-1]["content"]
    return str(said.partition("<passage>")[2].rpartition("</passage>")[0])


def grading(**grades: str) -> Answering:
    """A grader that replies ``grades[word]`` to a passage holding ``word``, else 0.1."""

    def grade(request: dict[str, Any]) -> Response:
        passage = _passage(request)
        return reply(next((g for word, g in grades.items() if word in passage), "0.1"))

    return answering(grade)


def config_for(
    server: FakeLLMServer,
    *,
    allow: tuple[str, ...] = (),
    routed: str = "knowledge",
    **collection: Any,
) -> Config:
    """Node J (model ``judge``) grades collection ``docs``, node W (``writer``) is routed for
    the category ``routed``; ``actions.http.allow`` lists ``allow``."""

    def node(model: str) -> dict[str, Any]:
        return {"base_url": server.base_url, "model": model, "timeout_s": 10}

    return Config.model_validate(
        {
            "cluster": {
                "nodes": {"J": node("judge"), "W": node("writer")},
                "routing": {routed: ["W"]},
            },
            "knowledge": {"docs": {"sources": ["kb"], "grader": "J", **collection}},
            "actions": {"http": {"allow": list(allow)}},
        }
    )


class Asking:
    """An indexed collection, the LLM runtime of ``config`` and what the budget counted."""

    def __init__(self, config: Config, store: Store, base: Path) -> None:
        self.config, self.store, self.base = config, store, base
        self.runtime = LLMRuntime(config, base, Registry(), store, {})
        self.spent = Spent()

    def ctx(self, *, dry_run: bool = False) -> SkillContext:
        return SkillContext(
            execution_id="e1",
            loop_id="qa",
            phase="analyze",
            step="answer",
            idempotency_key="e1:analyze:answer",
            llm_runtime=lambda: self.runtime,
            spend=self.spent,
            store=self.store,
            config=self.config,
            base=self.base,
            dry_run=dry_run,
        )

    async def answer(self, question: str, **params: Any) -> dict[str, Any]:
        definition = builtin_registry().skill("rag.answer")
        model = definition.params.model_validate(
            {"question": question, "collection": "docs", **params}
        )
        output: SkillOutput = await definition.fn(self.ctx(), model)
        assert output.metrics["llm.calls"] == sum(calls for _, calls in self.spent.counted)
        found: dict[str, Any] = output.data["rag"]
        return found

    async def retrieve(self, query: str, **params: Any) -> dict[str, Any]:
        output: SkillOutput = (
            await builtin_registry()
            .skill("rag.retrieve")
            .fn(self.ctx(), query=query, collection=params.pop("collection", "docs"), **params)
        )
        found: dict[str, Any] = output.data["retrieval"]
        return found


async def asking_over(config: Config, store: Store, base: Path) -> Asking:
    """``config``'s collections indexed from ``base`` into ``store``, to be asked."""
    await index(store, config, base)
    return Asking(config, store, base)
