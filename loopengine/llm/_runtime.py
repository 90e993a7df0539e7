"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import sqlalchemy as sa

from loopengine.contract import Config
from loopengine.llm._cluster import Cluster
from loopengine.llm._conversation import Conversation
from loopengine.llm._health import NodeHealth
from loopengine.llm._scores import explored
from loopengine.llm._tools import Toolbox, offered_tools
from loopengine.skills import Registry
from loopengine.store import Store, autolearn, health

__all__ = ["LLMRuntime"]

_Routed = tuple[dict[str, list[str]], tuple[dict[str, int], int]]
"""Tuned orders, and a category's exploration counts with its turn."""


class LLMRuntime:
    """One cluster and toolbox for every LLM skill of an engine; threads and health persist."""

    def __init__(
        self,
        config: Config,
        base: Path,
        registry: Registry,
        store: Store,
        environ: Mapping[str, str],
    ) -> None:
        self.cluster = Cluster(config.cluster, environ)
        self.autolearn = config.autolearn
        self.toolbox = Toolbox(offered_tools(config, base, registry))
        self.store = store
        self._health_loaded = False

    async def load_health(self) -> None:
        """Remember nodes cooled down by an earlier process."""
        if self._health_loaded:
            return
        rows = await self.store.read(health.load_health)
        for row in rows:
            if row["node"] in self.cluster.health:
                self.cluster.health[row["node"]] = NodeHealth(
                    row["failures"], row["cooled_until"], row["last_error"]
                )
        self._health_loaded = True

    async def load_routing(self, category: str | None) -> None:
        """Follow the routing orders the autotune loop wrote, and explore under-sampled nodes
        of ``category`` (``autolearn.explore`` of its messages); read at each message, so a new
        order applies at the next one."""
        settings, name = self.autolearn, category or "default"

        def read(connection: sa.Connection) -> _Routed:
            rows = autolearn.routing(connection)
            tuned = {c: list(row["nodes"]) for c, row in rows.items()}
            nodes = self.cluster.route(category, tuned)
            cap = settings.min_samples
            return tuned, autolearn.exploration_counts(connection, name, nodes, cap)

        self.cluster.tuned, (counts, turn) = await self.store.read(read)

        def explore(available: list[str]) -> str | None:
            return explored(
                available,
                counts,
                min_samples=settings.min_samples,
                share=settings.explore,
                turn=turn,
            )

        self.cluster.explore = explore

    async def save_health(self) -> None:
        rows = [
            {
                "node": name,
                "failures": h.failures,
                "cooled_until": h.cooled_until,
                "last_error": h.last_error,
                "updated_at": time.time(),
            }
            for name, h in self.cluster.health.items()
        ]

        await self.store.write(lambda c: health.save_health(c, rows))

    async def conversation(self, session: str) -> Conversation:
        """The session's thread, rebuilt from the store."""
        return await Conversation.open(self.store, session)

    async def aclose(self) -> None:
        await self.cluster.aclose()
