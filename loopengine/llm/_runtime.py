"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from loopengine.contract import Config
from loopengine.llm._cluster import Cluster, Explore
from loopengine.llm._conversation import Conversation
from loopengine.llm._health import NodeHealth
from loopengine.llm._memory import Profile, memory_context
from loopengine.llm._scores import explored
from loopengine.llm._tools import Toolbox, offered_tools
from loopengine.skills import Registry
from loopengine.store import Store, autolearn, health, memory, prompts

__all__ = ["ChatContext", "LLMRuntime"]

_Read = tuple[
    dict[str, list[str]], tuple[dict[str, int], int], dict[str, Any] | None, dict[str, Any] | None
]
"""Tuned orders, a category's exploration counts with its turn, its active prompt version and
the user's memory row."""


@dataclass(frozen=True, slots=True)
class ChatContext:
    """What a message is answered with beyond its thread: the category's instructions (version
    0: none) and what the chat remembers of the user, as system text."""

    prompt_version: int = 0
    instructions: str | None = None
    tuned: Mapping[str, list[str]] = field(default_factory=dict)
    """The routing orders the autotune loop wrote."""
    explore: Explore | None = None

    @classmethod
    def of(
        cls, prompt: Mapping[str, Any] | None, remembered: Mapping[str, Any] | None
    ) -> ChatContext:
        """The context of an active prompt row and a memory row (``store.prompts``,
        ``store.memory``), either missing."""
        parts = [prompt["text"]] if prompt is not None and prompt["text"] else []
        if remembered is not None:
            profile = Profile.of(remembered["profile"] or {})
            shown = memory_context(profile, remembered["summary"])
            parts.extend([shown] if shown else [])
        version = int(prompt["version"]) if prompt is not None else 0
        return cls(version, "\n\n".join(parts) or None)


class LLMRuntime:
    """One cluster and toolbox for every LLM skill of an engine; threads and health persist."""

    def __init__(
        self,
        config: Config,
        base: Path,
        registry: Registry,
        store: Store,
        environ: Mapping[str, str],
        private: tuple[Path, ...] = (),
    ) -> None:
        self.cluster = Cluster(config.cluster, environ, grader=config.autolearn.grader)
        self.autolearn = config.autolearn
        self.toolbox = Toolbox(offered_tools(config, base, registry, private))
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

    async def prepare(self, category: str, user: str | None) -> ChatContext:
        """Read what the autolearn loops wrote, at each message so a change applies at the next
        one: the tuned routing orders, the under-sampled nodes of ``category`` to explore
        (``autolearn.explore`` of its messages), its active instructions and ``user``'s memory;
        a value per message, so concurrent messages do not share it."""
        settings = self.autolearn

        def read(connection: sa.Connection) -> _Read:
            rows = autolearn.routing(connection)
            tuned = {c: list(row["nodes"]) for c, row in rows.items()}
            nodes = self.cluster.route(category, tuned)
            cap = settings.min_samples
            counts = autolearn.exploration_counts(connection, category, nodes, cap)
            found = prompts.active(connection, category).get(category)
            remembered = memory.profile(connection, user) if user else None
            return tuned, counts, found, remembered

        tuned, (counts, turn), prompt, remembered = await self.store.read(read)

        def explore(available: list[str]) -> str | None:
            return explored(
                available,
                counts,
                min_samples=settings.min_samples,
                share=settings.explore,
                turn=turn,
            )

        return replace(ChatContext.of(prompt, remembered), tuned=tuned, explore=explore)

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
