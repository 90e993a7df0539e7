"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from loopengine.contract.config import Config
from loopengine.llm.cluster import Cluster
from loopengine.llm.health import NodeHealth
from loopengine.llm.threads import append_and_load, append_batch, load_thread, prune
from loopengine.llm.tools import Toolbox, builtin_tools
from loopengine.skills.registry import Registry
from loopengine.store import Store
from loopengine.store.tables import node_health

__all__ = ["THREAD_WINDOW", "LLMRuntime"]

THREAD_WINDOW = 40


class LLMRuntime:
    """One cluster and toolbox for every LLM skill of an engine; threads and health persist."""

    def __init__(
        self,
        config: Config,
        base: Path,
        registry: Registry,
        store: Store | None,
        environ: Mapping[str, str],
    ) -> None:
        self.cluster = Cluster(config.cluster, environ)
        database = config.databases.get("default") or config.database
        tools = [
            *builtin_tools(base / config.tools_root, database, config.http_allow),
            *registry.tools,
        ]
        self.toolbox = Toolbox(tools)
        self.store = store
        self._health_loaded = False

    async def load_health(self) -> None:
        """Remember nodes cooled down by an earlier process."""
        if self._health_loaded or self.store is None:
            return
        rows = await self.store.read(lambda c: list(c.execute(sa.select(node_health)).mappings()))
        for row in rows:
            if row["node"] in self.cluster.health:
                self.cluster.health[row["node"]] = NodeHealth(
                    row["failures"], row["cooled_until"], row["last_error"]
                )
        self._health_loaded = True

    async def save_health(self) -> None:
        if self.store is None:
            return
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

        def save(connection: sa.Connection) -> None:
            connection.execute(node_health.delete())
            if rows:
                connection.execute(node_health.insert(), rows)

        await self.store.write(save)

    async def thread(self, session: str) -> list[dict[str, Any]]:
        """The session's messages, rebuilt from the store (the last ``THREAD_WINDOW``, safely)."""
        if self.store is None:
            return []
        return prune(await self.store.read(lambda c: load_thread(c, session)), THREAD_WINDOW)

    async def append_and_reload(
        self, session: str, messages: list[dict[str, Any]], operation_id: str
    ) -> list[dict[str, Any]] | None:
        """Persist one round atomically and return the thread rebuilt from the store."""
        if self.store is None:
            return None
        now = time.time()
        thread = await self.store.write(
            lambda c: append_and_load(c, session, messages, operation_id=operation_id, now=now)
        )
        return prune(thread, THREAD_WINDOW)

    async def append(
        self, session: str, messages: list[dict[str, Any]], operation_id: str | None = None
    ) -> None:
        """Append one atomic batch to the session's thread."""
        if self.store is None or not messages:
            return
        operation = operation_id or uuid.uuid4().hex
        now = time.time()
        await self.store.write(
            lambda c: append_batch(c, session, messages, operation_id=operation, now=now)
        )

    async def aclose(self) -> None:
        await self.cluster.aclose()
