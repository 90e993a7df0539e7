"""Searching a collection: the keyword ranking (BM25 on SQLite, ``ts_rank`` on PostgreSQL) of
the query's words, fused by reciprocal rank with the nearest vectors when the collection has
``embeddings`` (scored a page at a time in a worker thread: the event loop runs on meanwhile).
The query is untrusted: bounded, and reduced to words before it reaches SQL."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio.to_thread

from loopengine.contract import Config, KnowledgeCollection
from loopengine.errors import ContractError, LLMError, NotFound
from loopengine.knowledge._index import collection_of
from loopengine.knowledge._query import MAX_QUERY_CHARS, Nearest, fuse, terms, unit
from loopengine.llm import Cluster
from loopengine.store import knowledge

__all__ = ["CANDIDATES", "MAX_K", "VECTOR_PAGE", "Chunk", "Readable", "search"]

T = TypeVar("T")
MAX_K = 100
"""Most chunks one search returns."""
CANDIDATES = 50
"""Chunks each ranking offers to the fusion (at least ``k``)."""
VECTOR_PAGE = 1_000
"""Vectors read and scored at once."""
_LOG = logging.getLogger("loopengine.knowledge")


class Readable(Protocol):
    """What a search reads through: the async ``Store``, or a read-only reader made awaitable."""

    async def read(self, operation: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk found: its file (from the config's folder), heading path (``Install > Linux``),
    place in the file (0 first), text and score (higher is better: BM25 or ``ts_rank``, or the
    fused rank's score with ``embeddings``)."""

    source: str
    heading: str
    position: int
    text: str
    score: float

    def as_json(self) -> dict[str, object]:
        """The chunk as ``knowledge search --json`` and the API show it."""
        return {
            "source": self.source,
            "heading": self.heading,
            "text": self.text,
            "score": self.score,
        }


def _chunk(hit: knowledge.Hit, score: float) -> Chunk:
    return Chunk(hit.source, hit.heading, hit.position, hit.text, round(score, 6))


def _checked(query: str, k: int) -> None:
    if not 1 <= k <= MAX_K:
        raise ContractError(f"k {k}: write a whole number from 1 to {MAX_K}")
    if len(query) > MAX_QUERY_CHARS:
        raise ContractError(
            f"the query is {len(query):,} characters: at most {MAX_QUERY_CHARS:,} are searched"
        )


async def _query_vector(
    cluster: Cluster | None, config: Config, collection: KnowledgeCollection, query: str
) -> list[float] | None:
    """The query's embedding (unit length); None when the node fails (the keyword ranking is
    then used alone, and the failure logged)."""
    embeddings = collection.embeddings
    assert embeddings is not None
    nodes = cluster or Cluster(config.cluster, os.environ)
    try:
        (vector,) = await nodes.embed(embeddings.node, [query], embeddings.model)
    except LLMError as exc:
        _LOG.warning("searching by keywords alone: %s", exc)
        return None
    finally:
        if cluster is None:
            await nodes.aclose()
    return unit(vector)


async def _dense(
    store: Readable, collection: str, model: str, vector: list[float], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` chunks whose vectors are nearest ``vector``, best first: read a page at a
    time and each page scored in a worker thread, so the event loop (heartbeats, leases, HTTP)
    waits for a page's read, never for the scoring of a collection."""
    nearest = Nearest(vector, limit)
    after = 0
    while True:
        page = await store.read(knowledge.vectors, collection, model, after, VECTOR_PAGE)
        await anyio.to_thread.run_sync(nearest.add, page)
        if len(page) < VECTOR_PAGE:
            return nearest.ranking()
        after = page[-1][0]


async def search(
    store: Readable,
    config: Config,
    collection: str,
    query: str,
    k: int = 5,
    *,
    cluster: Cluster | None = None,
) -> list[Chunk]:
    """The ``k`` chunks of ``collection`` (a name under ``knowledge:`` in ``config``) that best
    answer ``query``, best first; none for a query without words. ``NotFound`` for an unknown
    collection or one never indexed, ``ContractError`` for ``k`` outside 1..``MAX_K`` or a query
    over ``MAX_QUERY_CHARS``. With ``embeddings``, the query is embedded by ``cluster``'s node (a
    cluster of the config, made for this call, when None)."""
    spec = collection_of(config, collection)
    _checked(query, k)
    words = terms(query)
    model = spec.embedding_model
    wanted = k if model is None else max(k, CANDIDATES)
    keyword = await store.read(knowledge.keyword_ranking, collection, words, wanted)
    if keyword is None:
        raise NotFound(
            f"collection {collection!r} was never indexed: run `loopengine knowledge index "
            f"{collection}`"
        )
    if model is None or not words:
        return [_chunk(hit, hit.score) for hit in keyword]
    vector = await _query_vector(cluster, config, spec, query)
    if vector is None:
        return [_chunk(hit, hit.score) for hit in keyword[:k]]
    dense = await _dense(store, collection, model, vector, wanted)
    fused = fuse([[hit.id for hit in keyword], [chunk for chunk, _ in dense]])[:k]
    found = {hit.id: hit for hit in keyword}
    missing = [chunk for chunk, _ in fused if chunk not in found]
    if missing:
        found |= await store.read(knowledge.chunks_by_id, missing)
    return [_chunk(found[chunk], score) for chunk, score in fused if chunk in found]
