"""What LLM skills share within one process: the cluster, the toolbox, and threads in the store."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from loopengine.autolearn import Profile, explored, memory_context
from loopengine.builtins._tools import offered_tools
from loopengine.contract import Config
from loopengine.llm import Cluster, Explore, NodeHealth, Toolbox
from loopengine.skills import Registry
from loopengine.store import NodeHealthRow, PromptVersion, Store, UserMemory, autolearn
from loopengine.threads import Conversation

__all__ = ["ChatContext", "LLMRuntime"]


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
    def of(cls, prompt: PromptVersion | None, remembered: UserMemory | None) -> ChatContext:
        """The context of an active prompt version and a user's memory, either missing."""
        parts = [prompt.text] if prompt is not None and prompt.text else []
        if remembered is not None:
            profile = Profile.of(remembered.profile or {})
            shown = memory_context(profile, remembered.summary)
            parts.extend([shown] if shown else [])
        version = prompt.version if prompt is not None else 0
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
        offered = offered_tools(config, base, registry, private, store=store, cluster=self.cluster)
        self.toolbox = Toolbox(offered)
        self.store = store
        self._health_loaded = False
        self._health_kept: dict[str, NodeHealth] = {}
        """The nodes' health the store holds from this runtime: loaded, or last handed over."""

    def _remember_health(self, rows: Sequence[NodeHealthRow]) -> None:
        """Remember nodes cooled down by an earlier process."""
        for row in rows:
            if row.node in self.cluster.health:
                self.cluster.health[row.node] = NodeHealth(
                    row.failures, row.cooled_until, row.last_error
                )
        self._health_kept = dict(self.cluster.health)
        self._health_loaded = True

    async def prepare(
        self, category: str, user: str | None, session: str, asked: str
    ) -> tuple[ChatContext, Conversation, bool]:
        """Read, in one transaction, ``session``'s thread, whether the operation ``asked``
        appended the message to it already, and what the autolearn loops wrote, at
        each message so a change applies at the next one: the tuned routing orders, the
        under-sampled nodes of ``category`` to explore (``autolearn.explore`` of its messages),
        its active instructions and ``user``'s memory; a value per message, so concurrent
        messages do not share it. The nodes' health is read with the first message."""
        settings = self.autolearn
        nodes = list(self.cluster.config.nodes)  # which are routed depends on the orders read
        start = await self.store.read(
            autolearn.chat_start,
            category,
            nodes,
            settings.min_samples,
            user,
            session,
            asked,
            not self._health_loaded,
        )
        if start.nodes is not None and not self._health_loaded:
            self._remember_health(start.nodes)
        read = start.reading
        tuned = {c: list(order.nodes) for c, order in read.routing.items()}
        routed = self.cluster.route(category, tuned)
        counts = {node: read.explored[node][0] for node in routed}
        turn = max((read.explored[node][1] for node in routed), default=0)

        def explore(available: list[str]) -> str | None:
            return explored(
                available,
                counts,
                min_samples=settings.min_samples,
                share=settings.explore,
                turn=turn,
            )

        context = ChatContext.of(read.prompt, read.remembered)
        conversation = Conversation.of(self.store, session, start.thread)
        return replace(context, tuned=tuned, explore=explore), conversation, start.asked

    def health_rows(self) -> list[NodeHealthRow]:
        """Each node's health now, as the store records it; from now on, what the store is
        taken to hold (``health_changes``)."""
        now = time.time()
        self._health_kept = dict(self.cluster.health)
        return [
            NodeHealthRow(name, h.failures, h.cooled_until, h.last_error, now)
            for name, h in self._health_kept.items()
        ]

    def health_changes(self) -> list[NodeHealthRow] | None:
        """``health_rows`` when a node's health changed since the store last had it from this
        runtime, else None: most messages change none, and write none. A commit lost with its
        step (a crash) leaves the store's health behind until a node's changes again: health
        only orders and cools nodes, and a stale row costs one call to a node still down."""
        return None if self.cluster.health == self._health_kept else self.health_rows()

    async def aclose(self) -> None:
        await self.cluster.aclose()
