"""Knowledge bases (``knowledge:`` in the config): files found and read by format
(``_sources``, ``_formats``), cut into chunks by heading and paragraph (``_chunking``), indexed
incrementally in the store (``_index``) and searched by keywords, fused with vectors when the
collection has ``embeddings`` (``_search``, ``_query``); ``corrective`` answers from them with
evidence or refuses.

    chunks = await search(store, config, "docs", "how do I install it?", k=5)
"""

from loopengine.knowledge._index import IndexReport, Progress, collection_of, index
from loopengine.knowledge._query import MAX_QUERY_CHARS
from loopengine.knowledge._search import MAX_K, Chunk, Readable, search
from loopengine.knowledge._sources import MAX_FILE_BYTES, MAX_FILES, MAX_SKIPPED, LeftOut, Skipped

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
