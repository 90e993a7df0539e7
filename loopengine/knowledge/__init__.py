"""Knowledge bases (``knowledge:`` in the config): files found and read by format
(``_sources``, ``_formats``), cut into chunks by heading and paragraph (``_chunking``), indexed
incrementally in the store (``_index``) and searched by keywords, fused with vectors when the
collection has ``embeddings`` (``_search``, ``_query``); ``corrective`` answers from them with
evidence or refuses.

    chunks = await search(store, config, "docs", "how do I install it?", k=5)

Names load with their module on first use: the skills' params read the query's bound without
loading the store.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.knowledge._index import IndexReport, Progress, collection_of, index
    from loopengine.knowledge._query import MAX_QUERY_CHARS
    from loopengine.knowledge._search import MAX_K, Chunk, Readable, search
    from loopengine.knowledge._sources import (
        MAX_FILE_BYTES,
        MAX_FILES,
        MAX_SKIPPED,
        LeftOut,
        Skipped,
    )

_EXPORTS = {
    "IndexReport": "loopengine.knowledge._index",
    "Progress": "loopengine.knowledge._index",
    "collection_of": "loopengine.knowledge._index",
    "index": "loopengine.knowledge._index",
    "MAX_QUERY_CHARS": "loopengine.knowledge._query",
    "MAX_K": "loopengine.knowledge._search",
    "Chunk": "loopengine.knowledge._search",
    "Readable": "loopengine.knowledge._search",
    "search": "loopengine.knowledge._search",
    "MAX_FILE_BYTES": "loopengine.knowledge._sources",
    "MAX_FILES": "loopengine.knowledge._sources",
    "MAX_SKIPPED": "loopengine.knowledge._sources",
    "LeftOut": "loopengine.knowledge._sources",
    "Skipped": "loopengine.knowledge._sources",
}

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_SKIPPED",
    "Chunk",
    "IndexReport",
    "LeftOut",
    "Progress",
    "Readable",
    "Skipped",
    "collection_of",
    "corrective",
    "index",
    "search",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
