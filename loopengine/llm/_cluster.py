"""The LLM cluster of the config: a client per node, shared health, and routing by category."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import httpx

from loopengine.contract import Cluster as ClusterConfig
from loopengine.errors import LLMError, LoopEngineError
from loopengine.expr import compile_template
from loopengine.llm._client import ChatClient, Completion
from loopengine.llm._health import NodeHealth
from loopengine.llm._routing import route_order
from loopengine.llm._stats import NodeStats

if TYPE_CHECKING:
    from loopengine.llm._toolbox import ToolSpec
    from loopengine.store.threads import ChatMessage

__all__ = ["BoundNode", "Cluster", "Explore"]

Explore = Callable[[list[str]], str | None]
"""Which under-sampled node of the available ones a message explores, if any."""


class Cluster:
    """Clients for the configured nodes, their health, and the routing table. A node's client,
    and its secrets, are made when the node is first called: a key that only one node needs is
    not required to talk to the others."""

    def __init__(
        self,
        config: ClusterConfig,
        environ: Mapping[str, str],
        *,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        grader: str | None = None,
    ) -> None:
        self.config = config
        self.grader = grader
        """The node that grades the chat's answers (``autolearn.grader``): in no order the
        config does not give it."""
        self.clock = clock
        self.http = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(None))
        self.environ = environ
        self.clients: dict[str, ChatClient] = {}
        self.health: dict[str, NodeHealth] = {name: NodeHealth() for name in config.nodes}
        self.stats: dict[str, NodeStats] = {name: NodeStats() for name in config.nodes}

    def client(self, name: str) -> ChatClient:
        """The client of node ``name``, made on first use; ``LLMError`` when its key cannot be
        resolved (a secret missing from the environment)."""
        found = self.clients.get(name)
        if found is None:
            node = self.config.nodes[name]
            try:
                key = (
                    compile_template(node.api_key).render({}, self.environ)
                    if node.api_key
                    else None
                )
            except LoopEngineError as exc:
                raise LLMError(f"node {name}: its api_key cannot be resolved: {exc}") from None
            found = self.clients[name] = ChatClient(name, node, self.http, api_key=key)
        return found

    def available(self, name: str) -> str | None:
        """Why ``name`` cannot be used now, or None when it can."""
        if name not in self.config.nodes:
            return f"node {name} is not in the cluster"
        health = self.health[name]
        if not health.available(self.clock()):
            return f"node {name} is cooling down after failures ({health.last_error})"
        return None

    def route(self, category: str, tuned: Mapping[str, list[str]] | None = None) -> list[str]:
        """Nodes for a category in preference order: the ``tuned`` order (the autotune loop's),
        else the config's (its ``default``, then every node but the grader, as fallback); nodes
        no longer in the cluster are left out, and those the config routes but a tuned order has
        not seen yet follow it."""
        return route_order(self.config, category, tuned or {}, self.grader)

    def pick(
        self,
        category: str,
        tuned: Mapping[str, list[str]] | None = None,
        explore: Explore | None = None,
    ) -> str | None:
        """The first available node for ``category`` (``tuned`` orders first), unless this
        message ``explore``s another."""
        order = self.route(category, tuned)
        available = [name for name in order if self.available(name) is None]
        chosen = explore(available) if explore else None
        return chosen or next(iter(available), None)

    def succeeded(self, name: str) -> None:
        self.health[name] = self.health[name].after_success()

    def failed(self, name: str, error: LLMError) -> None:
        self.health[name] = self.health[name].after_failure(
            self.clock(), str(error), error.status_code
        )

    async def chat(
        self,
        name: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """A completion from ``name`` (at most ``max_tokens`` long when given), keeping its health
        and counters up to date."""
        started = time.perf_counter()
        try:
            completion = await self.client(name).chat(messages, tools, max_tokens=max_tokens)
        except LLMError as exc:
            self.failed(name, exc)
            self._count(name, started, failed=True)
            raise
        self.succeeded(name)
        usage = completion.usage
        self._count(
            name,
            started,
            failed=False,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )
        return completion

    async def embed(self, name: str, texts: Sequence[str], model: str) -> list[list[float]]:
        """The embeddings of ``texts`` by node ``name``'s ``model``, keeping its health."""
        try:
            vectors = await self.client(name).embed(texts, model)
        except LLMError as exc:
            self.failed(name, exc)
            raise
        self.succeeded(name)
        return vectors

    def _count(self, name: str, started: float, *, failed: bool, **tokens: int) -> None:
        latency = time.perf_counter() - started
        self.stats[name] = self.stats[name].after(latency, failed=failed, **tokens)

    def bind(self, name: str) -> BoundNode:
        return BoundNode(self, name)

    async def aclose(self) -> None:
        await self.http.aclose()


class BoundNode:
    """One node of a cluster, as an agent talks to it (health kept by the cluster)."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.node = cluster.config.nodes[name]

    async def chat(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] | None = None
    ) -> Completion:
        return await self.cluster.chat(self.name, messages, tools)
