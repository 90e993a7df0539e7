"""What the knowledge skills and the chat's ``search_knowledge`` tool share: the bound of a query,
a chunk as they show it, and a collection never indexed told; and the tool itself, offered to
models when the config has knowledge collections. The knowledge package's search (the store) is
imported when a search runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from loopengine._json import JSONObject
from loopengine.contract import Config
from loopengine.knowledge import MAX_QUERY_CHARS
from loopengine.skills import ATTRIBUTE, ToolDef, tool

if TYPE_CHECKING:
    from loopengine.knowledge import Chunk, Readable
    from loopengine.knowledge.corrective import ChunkLike
    from loopengine.llm import Cluster

__all__ = ["MAX_TOOL_TEXT", "Question", "knowledge_tool", "located"]

MAX_TOOL_TEXT = 2_000
"""Characters of a chunk's text ``search_knowledge`` gives a model."""
_LISTED = 20
"""Most collection names the tool's description lists."""

Question = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
"""A question or query: as long as a search reads."""
ToolK = Annotated[int, Field(ge=1, le=10)]


def located(chunk: ChunkLike) -> JSONObject:
    """A chunk with where it was found: its file, heading path, place in the file and score."""
    return {
        "source": chunk.source,
        "heading": chunk.heading,
        "position": chunk.position,
        "score": chunk.score,
        "text": chunk.text,
    }


def _shown(chunk: Chunk) -> JSONObject:
    """A chunk as a model reads it: its text cut to ``MAX_TOOL_TEXT``."""
    cut = len(chunk.text) > MAX_TOOL_TEXT
    return {**located(chunk), "text": chunk.text[:MAX_TOOL_TEXT] + ("…" if cut else "")}


def knowledge_tool(config: Config, store: Readable | None, cluster: Cluster | None) -> ToolDef:
    """``search_knowledge`` over the config's collections (the first by default), read through
    ``store``; a query embedded by ``cluster``'s node when its collection has ``embeddings``."""
    names = list(config.knowledge)
    listed = ", ".join(names[:_LISTED]) + (", …" if len(names) > _LISTED else "")

    @tool(
        "search_knowledge",
        description="Search a knowledge base by keywords: the passages that best match, best "
        f"first, each with its source file, heading and text. Collections: {listed}.",
    )
    async def search_knowledge(
        query: Question, collection: str | None = None, k: ToolK = 5
    ) -> JSONObject:
        """Args:
        query: Keywords, or the question itself.
        collection: The collection to search (default: the first listed).
        k: Most passages returned.
        """
        from loopengine.knowledge import search

        if store is None:
            raise RuntimeError("knowledge bases are searched only where the store is open")
        name = collection or names[0]
        chunks = await search(store, config, name, query, k, cluster=cluster)
        return {"collection": name, "results": [_shown(chunk) for chunk in chunks]}

    definition: ToolDef = getattr(search_knowledge, ATTRIBUTE)
    return definition
