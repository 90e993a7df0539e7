"""Indexing a collection, incrementally: each file's digest (its bytes and how it is cut) is
kept, so an unchanged file is skipped, a changed one cut again and a deleted one removed. Files
are written a batch at a time, each batch in one transaction: a run that stops loses nothing
already written. With ``embeddings``, the chunks without a vector are then embedded by the node,
a batch at a time."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread

from loopengine._suggestions import did_you_mean
from loopengine.contract import Config, KnowledgeCollection
from loopengine.errors import NotFound
from loopengine.knowledge._chunking import cut
from loopengine.knowledge._formats import Unreadable
from loopengine.knowledge._query import packed
from loopengine.knowledge._sources import LeftOut, Skipped, SourceFile, find_files, read_blocks
from loopengine.llm import Cluster
from loopengine.store import Store, knowledge

__all__ = [
    "BATCH_CHUNKS",
    "BATCH_FILES",
    "EMBED_BATCH",
    "FORMAT_VERSION",
    "IndexReport",
    "Progress",
    "collection_of",
    "index",
]

FORMAT_VERSION = 2
"""How files are read and cut; a new version cuts every file again."""
BATCH_FILES = 200
"""Most files written in one transaction."""
BATCH_CHUNKS = 5_000
"""Chunks after which a batch is written whatever its number of files."""
EMBED_BATCH = 64
"""Chunks embedded by one call of the node."""
MAX_EMBEDDED_CHARS = 8_000
"""Characters of a chunk (with its heading) sent to be embedded."""

Progress = Callable[[str, int, int], None]
"""Told ``(collection, files done, files found)`` as batches are written."""


@dataclass(slots=True)
class IndexReport:
    """What an index run did to a collection: files found now, cut (new or changed), left as
    they were, removed; chunks written; vectors made; files left out, and why (the first
    ``MAX_SKIPPED``, the others counted)."""

    collection: str
    files: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    embedded: int = 0
    skipped: LeftOut = field(default_factory=LeftOut)
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        """The report as ``knowledge index --json`` prints it."""
        counts = {name: getattr(self, name) for name in ("files", "changed", "unchanged")}
        counts |= {"removed": self.removed, "chunks": self.chunks, "embedded": self.embedded}
        skipped = [{"source": item.name, "reason": item.reason} for item in self.skipped]
        return {
            "collection": self.collection,
            **counts,
            "skipped": skipped,
            "skipped_more": self.skipped.more,
            "seconds": self.seconds,
        }


def _salt(collection: KnowledgeCollection) -> bytes:
    return f"{FORMAT_VERSION}:{collection.chunk.size}:{collection.chunk.overlap}\0".encode()


def _prepare(
    file: SourceFile, known: str | None, collection: KnowledgeCollection
) -> knowledge.FileChunks | None:
    """The file's new chunks; None when its digest is ``known`` (it did not change);
    ``Unreadable`` when it cannot be read."""
    digest, blocks = read_blocks(file, _salt(collection))
    if digest == known:
        return None
    pieces = cut(blocks(), collection.chunk.size, collection.chunk.overlap)
    return knowledge.FileChunks(file.name, digest, tuple(pieces))


async def _write_files(
    store: Store,
    name: str,
    collection: KnowledgeCollection,
    base: Path,
    report: IndexReport,
    progress: Progress | None,
) -> None:
    """Cut the new and changed files into chunks, a batch per transaction; remove the files
    gone from the sources (or now unreadable)."""
    found = await anyio.to_thread.run_sync(find_files, base, collection.sources)
    report.files, report.skipped = len(found.files), found.skipped
    known = await store.read(knowledge.digests, name)
    batch: list[knowledge.FileChunks] = []
    kept: set[str] = set()
    for done, file in enumerate(found.files, start=1):
        try:
            prepared = await anyio.to_thread.run_sync(
                _prepare, file, known.get(file.name), collection
            )
        except Unreadable as exc:
            report.skipped.add(Skipped(file.name, str(exc)))
            continue
        kept.add(file.name)
        if prepared is None:
            report.unchanged += 1
        else:
            batch.append(prepared)
            report.changed += 1
            report.chunks += len(prepared.pieces)
        if len(batch) >= BATCH_FILES or sum(len(item.pieces) for item in batch) >= BATCH_CHUNKS:
            await store.write(knowledge.replace_files, name, batch, time.time())
            batch = []
            if progress is not None:
                progress(name, done, len(found.files))
    if batch:
        await store.write(knowledge.replace_files, name, batch, time.time())
    gone = sorted(set(known) - kept)
    report.removed = len(gone)
    await store.write(knowledge.remove_files, name, gone)
    if progress is not None:
        progress(name, len(found.files), len(found.files))


def _embedded_text(chunk: knowledge.Unembedded) -> str:
    text = f"{chunk.heading}\n\n{chunk.text}" if chunk.heading else chunk.text
    return text[:MAX_EMBEDDED_CHARS]


async def _embed(
    store: Store,
    name: str,
    collection: KnowledgeCollection,
    cluster: Cluster | None,
    report: IndexReport,
) -> None:
    """Give every chunk of the collection a vector, a batch per call and transaction (vectors of
    another model removed first; all of them without ``embeddings``)."""
    await store.write(knowledge.use_embedding_model, name, collection.embedding_model)
    embeddings = collection.embeddings
    while embeddings is not None and cluster is not None:
        chunks = await store.read(knowledge.unembedded, name, EMBED_BATCH)
        if not chunks:
            return
        texts = [_embedded_text(chunk) for chunk in chunks]
        vectors = await cluster.embed(embeddings.node, texts, embeddings.model)
        rows = [(chunk.id, packed(vector)) for chunk, vector in zip(chunks, vectors, strict=True)]
        await store.write(knowledge.put_vectors, name, rows)
        report.embedded += len(rows)


def collection_of(config: Config, name: str) -> KnowledgeCollection:
    """The collection ``name`` of the config; ``NotFound`` naming the known ones."""
    found = config.knowledge.get(name)
    if found is not None:
        return found
    if not config.knowledge:
        raise NotFound(
            f"no knowledge collection {name!r}: the config has none (add `knowledge:` to "
            "loopengine.yaml)"
        )
    known = ", ".join(config.knowledge)
    raise NotFound(
        f"no knowledge collection {name!r}{did_you_mean(name, list(config.knowledge))} "
        f"(collections: {known})"
    )


async def index(
    store: Store,
    config: Config,
    base: Path,
    names: Sequence[str] = (),
    *,
    cluster: Cluster | None = None,
    progress: Progress | None = None,
) -> list[IndexReport]:
    """Bring the collections ``names`` (default: all of the config) up to date with their
    sources under the config's folder ``base``; a report for each. The chunks of a collection
    with ``embeddings`` are embedded by ``cluster``'s node (a cluster of the config, made for
    this run, when None)."""
    chosen = {name: collection_of(config, name) for name in names or config.knowledge}
    owned = cluster is None and any(c.embeddings for c in chosen.values())
    nodes = Cluster(config.cluster, os.environ) if owned else cluster
    reports = []
    try:
        for name, collection in chosen.items():
            started = time.perf_counter()
            report = IndexReport(name)
            reports.append(report)
            await _write_files(store, name, collection, base, report, progress)
            await _embed(store, name, collection, nodes, report)
            await store.write(knowledge.finish_index, name, time.time())
            report.seconds = round(time.perf_counter() - started, 3)
    finally:
        if owned and nodes is not None:
            await nodes.aclose()
    return reports
