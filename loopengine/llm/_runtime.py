"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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

    async def load_routing(self) -> None:
        """Follow the routing orders the autotune loop wrote, and explore under-sampled nodes
        (``autolearn.explore`` of the messages); read at each message, so a new order applies
        at the next one."""
        settings = self.autolearn

        def read(connection: sa.Connection) -> tuple[dict[str, Any], dict[tuple[str, str], int]]:
            return autolearn.routing(connection), autolearn.sample_counts(connection)

        tuned, counts = await self.store.read(read)
        self.cluster.tuned = {category: list(row["nodes"]) for category, row in tuned.items()}

        def explore(category: str, available: list[str]) -> str | None:
            known = {node: n for (c, node), n in counts.items() if c == category}
            return explored(
                available, known, min_samples=settings.min_samples, share=settings.explore
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
