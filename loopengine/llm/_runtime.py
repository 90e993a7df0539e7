"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from loopengine.contract import Config
from loopengine.llm._cluster import Cluster
from loopengine.llm._conversation import Conversation
from loopengine.llm._health import NodeHealth
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
        """Follow the routing orders the autotune loop wrote (read at each message, so a new
        order applies at the next one)."""
        tuned = await self.store.read(autolearn.routing)
        self.cluster.tuned = {category: list(row["nodes"]) for category, row in tuned.items()}

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
