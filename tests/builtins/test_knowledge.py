"""``search_knowledge``, the tool that lets the chat's models search a knowledge collection:
offered when the config has one, called by the chain's research stage like any other tool, its
output bounded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_registry, offered_tools
from loopengine.builtins._knowledge import MAX_TOOL_TEXT, knowledge_tool
from loopengine.contract import Config
from loopengine.skills import Registry, SkillOutput
from loopengine.store import Store
from loopengine.testing import FakeLLMServer, reply, tool_call
from tests.builtins.knowledge_base import KB, Asking, asking_over, config_for
from tests.knowledge.conftest import write

pytestmark = pytest.mark.anyio

LONG = "lorem ipsum " * 1_000


@pytest.fixture
async def asking(server: FakeLLMServer, tmp_path: Path) -> AsyncIterator[Asking]:
    write(tmp_path, {**KB, "kb/long.md": f"# Long\n\n{LONG}\n"})
    config = config_for(server, chunk={"size": 20_000, "overlap": 0})
    async with Store.open(f"sqlite:///{tmp_path / 'kb.db'}") as store:
        made = await asking_over(config, store, tmp_path)
        yield made
        await made.runtime.aclose()


async def _search(asking: Asking, **arguments: Any) -> Any:
    outcome = await asking.runtime.toolbox.run("search_knowledge", arguments)
    return outcome.result if outcome.ok else outcome.error


def test_the_tool_is_offered_only_with_knowledge_collections(tmp_path: Path) -> None:
    def names(config: Config) -> list[str]:
        return [t.name for t in offered_tools(config, tmp_path, Registry(), ())]

    assert "search_knowledge" not in names(Config())
    with_docs = Config.model_validate({"knowledge": {"docs": {"sources": ["kb"]}}})
    assert "search_knowledge" in names(with_docs)


def test_the_tools_description_names_the_collections() -> None:
    config = Config.model_validate(
        {"knowledge": {"docs": {"sources": ["kb"]}, "faq": {"sources": ["faq"]}}}
    )
    assert knowledge_tool(config, None, None).description.endswith("Collections: docs, faq.")


async def test_the_research_stage_searches_a_collection_and_reads_what_it_found(
    server: FakeLLMServer, asking: Asking
) -> None:
    server.script(
        "judge",
        [tool_call("search_knowledge", {"query": "factory reset", "k": 2}), reply("Found it.")],
    )
    server.script("writer", [reply("Hold the pairing button for ten seconds.")])
    stages = [
        {"node": "J", "role": "research", "max_turns": 4},
        {"node": "W", "role": "review", "max_turns": 2},
    ]
    chat = builtin_registry().skill("llm.reflexive").fn
    output: SkillOutput = await chat(asking.ctx(), message="How do I reset it?", stages=stages)
    first, second = server.requests_for("judge")
    assert "search_knowledge" in [tool["function"]["name"] for tool in first["tools"]]
    told = json.loads(second["messages"][-1]["content"])["result"]
    assert told["collection"] == "docs"
    assert [(r["source"], r["heading"]) for r in told["results"]] == [
        ("kb/hub.md", "Hub > Factory reset")
    ]
    assert output.data["chat"]["reply"] == "Hold the pairing button for ten seconds."


async def test_a_long_chunk_reaches_the_model_cut(asking: Asking) -> None:
    found = await _search(asking, query="lorem ipsum")
    [result] = found["results"]
    assert result["text"] == LONG.strip()[:MAX_TOOL_TEXT] + "…"


async def test_the_tool_refuses_more_than_ten_passages(asking: Asking) -> None:
    said = await _search(asking, query="reset", k=11)
    assert said == (
        "invalid arguments for search_knowledge: k: Input should be less than or equal to 10"
    )


async def test_an_unknown_collection_is_told_with_those_there_are(asking: Asking) -> None:
    said = await _search(asking, query="reset", collection="doc")
    assert (
        said == "NotFound: no knowledge collection 'doc'; did you mean 'docs'? (collections: docs)"
    )


async def test_a_collection_never_indexed_is_told_with_how_to_index_it(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    config = config_for(server)
    async with Store.open(f"sqlite:///{tmp_path / 'kb.db'}") as store:
        asking = Asking(config, store, tmp_path)
        try:
            said = await _search(asking, query="reset")
        finally:
            await asking.runtime.aclose()
    assert said == (
        "NotFound: collection 'docs' was never indexed: run `loopengine knowledge index docs`"
    )
