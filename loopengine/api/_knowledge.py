"""``/knowledge``: the knowledge bases of the config and a search of one, as ``loopengine
knowledge list`` and ``search`` print them."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query
from pydantic import BaseModel

from loopengine.api._context import ApiContext
from loopengine.app import knowledge_bases, perform
from loopengine.knowledge import MAX_K, MAX_QUERY_CHARS, search

__all__ = ["add_knowledge_routes"]


class CollectionOut(BaseModel):
    name: str
    sources: list[str]
    embeddings: str | None
    """The node and model its vectors are made with (``node/model``); null: keywords only."""
    files: int
    chunks: int
    vectors: int
    indexed_at: str | None
    """When it was last indexed (ISO 8601 UTC); null: never."""


class Collections(BaseModel):
    collections: list[CollectionOut]


class ChunkOut(BaseModel):
    source: str
    heading: str
    text: str
    score: float


class Found(BaseModel):
    results: list[ChunkOut]
    """Best first."""


def add_knowledge_routes(app: FastAPI, context: ApiContext) -> None:
    """``GET /knowledge`` and ``GET /knowledge/{name}/search``."""
    config = context.runtime.workspace.config

    @app.get("/knowledge")
    async def collections() -> Collections:
        """Each collection of the config: its sources, files, chunks, vectors and when it was
        last indexed (``loopengine knowledge index``); what ``knowledge list --json`` prints."""
        found = await perform(context.store, knowledge_bases(config))
        return Collections.model_validate({"collections": [base.as_json() for base in found]})

    @app.get("/knowledge/{name}/search")
    async def search_collection(
        name: str,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS)],
        k: Annotated[int, Query(ge=1, le=MAX_K)] = 5,
    ) -> Found:
        """The ``k`` chunks of collection ``name`` that best match ``q``, best first (404 for a
        collection the config does not name): what ``knowledge search --json`` prints."""
        llm = context.runtime.engine.services.llm()
        cluster = None if llm is None else llm.cluster
        found = await search(context.store, config, name, q, k, cluster=cluster)
        return Found.model_validate({"results": [chunk.as_json() for chunk in found]})
