"""The LLM runtime hands the store the nodes' health only when it changed: most messages change
none, and then write none."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopengine.builtins import LLMRuntime
from loopengine.contract import Config
from loopengine.skills import Registry
from loopengine.store import NodeHealthRow, Store, health

pytestmark = pytest.mark.anyio


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[LLMRuntime]:
    node = {"base_url": "http://127.0.0.1:9", "model": "ol1"}
    config = Config.model_validate({"cluster": {"nodes": {"OL1": node}}})
    async with Store.open(f"sqlite:///{tmp_path / 'chat.db'}") as store:
        built = LLMRuntime(config, tmp_path, Registry(), store, {})
        yield built
        await built.aclose()


def _nodes(rows: list[NodeHealthRow] | None) -> list[tuple[str, int]] | None:
    return None if rows is None else [(row.node, row.failures) for row in rows]


async def test_health_is_handed_over_once_then_only_when_a_node_s_changes(
    runtime: LLMRuntime,
) -> None:
    assert _nodes(runtime.health_changes()) == [("OL1", 0)]
    assert runtime.health_changes() is None
    nodes = runtime.cluster.health
    nodes["OL1"] = nodes["OL1"].after_failure(1.0, "timeout")
    assert _nodes(runtime.health_changes()) == [("OL1", 1)]
    assert runtime.health_changes() is None


async def test_health_read_from_the_store_is_not_written_back(runtime: LLMRuntime) -> None:
    cooled = NodeHealthRow("OL1", 2, 9e9, "timeout", 1.0)
    await runtime.store.write(health.save_health, [cooled])
    await runtime.prepare("default", None, "s1", "s1:user")
    assert runtime.cluster.health["OL1"].failures == 2
    assert runtime.health_changes() is None
