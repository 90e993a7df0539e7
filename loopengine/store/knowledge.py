"""Knowledge bases: each collection's files (by path, with the digest they were cut from), their
chunks, the keyword index over them (SQLite FTS5 with BM25, PostgreSQL ``tsvector`` with
``ts_rank``) and their vectors. A file's chunks are replaced whole, in its writer's transaction."""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from loopengine.store._dialect import dialect_insert
from loopengine.store._tables import (
    knowledge_chunks,
    knowledge_collections,
    knowledge_files,
    knowledge_vectors,
)

__all__ = [
    "NARROW_ABOVE",
    "REMOVED_AT_ONCE",
    "CollectionSummary",
    "FileChunks",
    "Hit",
    "Narrowing",
    "Piece",
    "Unembedded",
    "chunks_by_id",
    "digests",
    "finish_index",
    "keyword_ranking",
    "put_vectors",
    "remove_files",
    "replace_files",
    "summaries",
    "unembedded",
    "use_embedding_model",
    "vectors",
]

REMOVED_AT_ONCE = 1_000
"""Files removed by one statement: a database bounds the parameters a statement binds (65,535
on PostgreSQL, 32,766 by default on SQLite), and a path is one."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A chunk as it is written: its place in its file, its heading path and its text."""

    position: int
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class FileChunks:
    """A file's new chunks, and the digest of what they were cut from."""

    path: str
    digest: str
    pieces: tuple[Piece, ...]


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk found: its id, file, heading path, place in the file, text and score (higher is
    better)."""

    id: int
    source: str
    heading: str
    position: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Unembedded:
    """A chunk that has no vector yet."""

    id: int
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class CollectionSummary:
    """What a collection holds: files, chunks, vectors, and when an index run last ended."""

    name: str
    files: int
    chunks: int
    vectors: int
    indexed_at: float | None
    embedding_model: str | None


def _collection_id(connection: sa.Connection, name: str) -> int | None:
    query = sa.select(knowledge_collections.c.id).where(knowledge_collections.c.name == name)
    found = connection.execute(query).scalar()
    return None if found is None else int(found)


def _create(connection: sa.Connection, name: str) -> int:
    """The id of collection ``name``, made when it has none."""
    insert = dialect_insert(connection, knowledge_collections).values(name=name)
    connection.execute(insert.on_conflict_do_nothing())
    found = _collection_id(connection, name)
    assert found is not None
    return found


def digests(connection: sa.Connection, name: str) -> dict[str, str]:
    """The digest of each file of collection ``name``, by path."""
    query = (
        sa.select(knowledge_files.c.path, knowledge_files.c.digest)
        .join(knowledge_collections, knowledge_collections.c.id == knowledge_files.c.collection_id)
        .where(knowledge_collections.c.name == name)
    )
    return {str(path): str(digest) for path, digest in connection.execute(query)}


def _forget(connection: sa.Connection, collection: int, paths: Sequence[str]) -> None:
    """Remove the files ``paths`` of a collection with their chunks and vectors,
    ``REMOVED_AT_ONCE`` files a statement."""
    for start in range(0, len(paths), REMOVED_AT_ONCE):
        batch = paths[start : start + REMOVED_AT_ONCE]
        files = sa.select(knowledge_files.c.id).where(
            knowledge_files.c.collection_id == collection, knowledge_files.c.path.in_(batch)
        )
        chunks = sa.select(knowledge_chunks.c.id).where(knowledge_chunks.c.file_id.in_(files))
        vectors = knowledge_vectors.delete().where(knowledge_vectors.c.chunk_id.in_(chunks))
        connection.execute(vectors)
        connection.execute(knowledge_chunks.delete().where(knowledge_chunks.c.file_id.in_(files)))
        connection.execute(knowledge_files.delete().where(knowledge_files.c.id.in_(files)))


def replace_files(
    connection: sa.Connection, name: str, files: Sequence[FileChunks], now: float
) -> None:
    """Each of ``files`` holds exactly its new chunks in collection ``name`` (made if new)."""
    collection = _create(connection, name)
    _forget(connection, collection, [file.path for file in files])
    for file in files:
        row = {"collection_id": collection, "path": file.path, "digest": file.digest}
        row |= {"chunks": len(file.pieces), "indexed_at": now}
        file_id = connection.execute(knowledge_files.insert().values(**row)).inserted_primary_key
        assert file_id is not None
        chunks = [
            {"collection_id": collection, "file_id": file_id[0], "position": piece.position}
            | {"heading": piece.heading, "text": piece.text}
            for piece in file.pieces
        ]
        if chunks:
            connection.execute(knowledge_chunks.insert(), chunks)


def remove_files(connection: sa.Connection, name: str, paths: Sequence[str]) -> None:
    """Collection ``name`` no longer holds the files ``paths`` (gone from its sources)."""
    collection = _collection_id(connection, name)
    if collection is not None and paths:
        _forget(connection, collection, paths)


def finish_index(connection: sa.Connection, name: str, now: float) -> None:
    """An index run of collection ``name`` ended at ``now``."""
    collection = _create(connection, name)
    connection.execute(
        knowledge_collections.update()
        .where(knowledge_collections.c.id == collection)
        .values(indexed_at=now)
    )


_EVER_INDEXED = (
    "k.indexed_at IS NOT NULL OR EXISTS (SELECT 1 FROM knowledge_files f WHERE f.collection_id "
    "= k.id)"
)
"""Whether collection ``k`` was ever indexed: an index run of it ended, or wrote files before it
stopped (what it wrote is searched)."""
_INDEXED_ID = sa.text(
    f"SELECT k.id FROM knowledge_collections k WHERE k.name = :name AND ({_EVER_INDEXED})"
)


def summaries(connection: sa.Connection) -> list[CollectionSummary]:
    """Every collection ever indexed, by name, with its counts."""
    files = (
        sa.select(
            knowledge_files.c.collection_id,
            sa.func.count().label("files"),
            sa.func.sum(knowledge_files.c.chunks).label("chunks"),
        )
        .group_by(knowledge_files.c.collection_id)
        .subquery()
    )
    vectors = (
        sa.select(knowledge_vectors.c.collection_id, sa.func.count().label("vectors"))
        .group_by(knowledge_vectors.c.collection_id)
        .subquery()
    )
    table = knowledge_collections
    query = (
        sa.select(table, files.c.files, files.c.chunks, vectors.c.vectors)
        .outerjoin(files, files.c.collection_id == table.c.id)
        .outerjoin(vectors, vectors.c.collection_id == table.c.id)
        .order_by(table.c.name)
    )
    return [
        CollectionSummary(
            row["name"],
            int(row["files"] or 0),
            int(row["chunks"] or 0),
            int(row["vectors"] or 0),
            row["indexed_at"],
            row["embedding_model"],
        )
        for row in connection.execute(query).mappings()
    ]


_K1 = 1.2
"""FTS5's ``bm25`` constant k1: a phrase adds less than ``k1 + 1`` times its IDF to a score."""
NARROW_ABOVE = 2_000
"""Chunks a query's terms are found in (summed) above which the rarest terms' chunks are scored
first; below, scoring every match costs less than a second pass."""


@dataclass(frozen=True, slots=True)
class Narrowing:
    """A query's terms found in the index, rarest first, with the chunks each is in and the most
    it can add to a chunk's BM25 score: the chunks holding none of the rarest terms need not be
    scored once the k-th best score found beats what the other terms could add up to (the bound
    of Turtle and Flood's MaxScore, 1995), which spares scoring the many chunks that hold only
    common words, and returns what scoring every match would."""

    terms: tuple[str, ...]
    hits: tuple[int, ...]
    ceilings: tuple[float, ...]

    @classmethod
    def of(cls, terms: Sequence[str], hits: Sequence[int], rows: int) -> Narrowing:
        """``terms`` found in ``hits`` of ``rows`` chunks (those in none left out), each bounded
        by FTS5's IDF (never below 1e-6)."""
        found = sorted((count, n) for n, count in enumerate(hits) if count)
        idfs = [math.log((max(rows, c) - c + 0.5) / (c + 0.5)) for c, _ in found]
        return cls(
            tuple(terms[n] for _, n in found),
            tuple(count for count, _ in found),
            tuple((_K1 + 1) * max(idf, 1e-6) for idf in idfs),
        )

    def first(self) -> int:
        """How many of the rarest terms the chunks scored first hold one of: enough that the
        others could not outscore a chunk holding each term once at the average length (which
        scores the sum of the IDFs, the usual best); all of them when few chunks match."""
        if sum(self.hits) <= NARROW_ABOVE:
            return len(self.terms)
        return self._reach(sum(self.ceilings) / (_K1 + 1))

    def after(self, scored: int, kth: float | None) -> int | None:
        """Given the k-th best score (None: fewer than k found) of the chunks holding one of the
        ``scored`` rarest terms: None when no other chunk can beat it, else how many of the
        rarest terms to score the chunks of next, so that the next pass is the last."""
        if scored == len(self.terms) or (kth is not None and kth > sum(self.ceilings[scored:])):
            return None
        return len(self.terms) if kth is None else self._reach(kth)

    def _reach(self, score: float) -> int:
        """The fewest rarest terms (at least one) whose others together add less than ``score``."""
        rarest = len(self.terms)
        while rarest > 1 and sum(self.ceilings[rarest - 1 :]) < score:
            rarest -= 1
        return rarest


def _phrase(term: str) -> str:
    """``term`` quoted as an FTS5 string (FTS5's own syntax never reaches it); one without
    letters is looked for in the heading and text only, as the collection's id is a number
    (``1`` would match every chunk of collection 1), while a word with letters cannot be one and
    goes without the column filter, which costs a third more on common words."""
    quoted = '"' + term.replace('"', '""') + '"'
    return quoted if any(char.isalpha() for char in term) else f"{{heading text}} : {quoted}"


def _match(terms: Sequence[str]) -> str:
    """The FTS5 query of chunks whose heading or text holds any of ``terms``."""
    return " OR ".join(_phrase(term) for term in terms)


@functools.cache
def _sqlite_terms(terms: int) -> sa.TextClause:
    """Collection ``:name``'s id, whether it was ever indexed, the chunks of every collection,
    whether ``:name`` holds them all, and how many hold each of ``terms`` terms (``:t0``…)."""
    hits = "".join(
        f", (SELECT count(*) FROM knowledge_fts WHERE knowledge_fts MATCH :t{n})"
        for n in range(terms)
    )
    return sa.text(
        f"SELECT k.id, ({_EVER_INDEXED}), (SELECT sum(chunks) FROM knowledge_files), (SELECT "
        f"min(collection_id) = k.id AND max(collection_id) = k.id FROM knowledge_files){hits} "
        "FROM knowledge_collections k WHERE k.name = :name"
    )


def _sqlite_ranked(narrowed: str) -> sa.TextClause:
    """The chunks of the ``:limit`` FTS5 rows matching ``:match`` best by BM25 (``narrowed``
    further)."""
    return sa.text(
        "SELECT c.id, f.path AS source, c.heading, c.position, c.text, top.score FROM (SELECT "
        "rowid AS id, -bm25(knowledge_fts, 0.0, 1.0, 1.0) AS score FROM knowledge_fts WHERE "
        f"knowledge_fts MATCH :match {narrowed} ORDER BY score DESC, id LIMIT :limit) AS top "
        "JOIN knowledge_chunks c ON c.id = top.id JOIN knowledge_files f ON f.id = c.file_id "
        "ORDER BY top.score DESC, c.id"
    )


_SQLITE_RANKING = _sqlite_ranked("")
_SQLITE_NARROWED = _sqlite_ranked(
    "AND +rowid IN (SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH :among)"
)
_POSTGRESQL_RANKING = sa.text(
    "SELECT c.id, f.path AS source, c.heading, c.position, c.text, "
    "ts_rank(c.search, q.query) AS score "
    "FROM knowledge_chunks c JOIN knowledge_files f ON f.id = c.file_id, "
    "websearch_to_tsquery('english', :words) AS q(query) "
    "WHERE c.collection_id = :collection AND c.search @@ q.query "
    "ORDER BY score DESC, c.id LIMIT :limit"
)


def _best(hits: Iterable[Hit], limit: int) -> list[Hit]:
    return heapq.nsmallest(limit, hits, key=lambda hit: (-hit.score, hit.id))


def _narrowed(
    connection: sa.Connection, narrowing: Narrowing, every: str, within: str, limit: int
) -> list[Hit]:
    """The ``limit`` chunks best for ``every`` term (those ``within`` matches), scoring the
    chunks of the rarest terms first and the others only if they could still rank."""
    best: list[Hit] = []
    scored = 0
    rarest: int | None = narrowing.first()
    while rarest is not None:
        among = _match(narrowing.terms[scored:rarest])
        if scored:
            among = f"({among}) NOT ({_match(narrowing.terms[:scored])})"
        arguments = {"match": every, "among": f"{within}({among})", "limit": limit}
        ranked = connection.execute(_SQLITE_NARROWED, arguments).mappings()
        best = _best([*best, *(Hit(**row) for row in ranked)], limit)
        kth = best[-1].score if len(best) == limit else None
        scored, rarest = rarest, narrowing.after(rarest, kth)
    return best


def _sqlite_ranking(
    connection: sa.Connection, name: str, terms: Sequence[str], limit: int
) -> list[Hit] | None:
    """BM25 in FTS5, every match scored when few chunks match, else narrowed (``Narrowing``)."""
    arguments = {"name": name} | {f"t{n}": _match([term]) for n, term in enumerate(terms)}
    found = connection.execute(_sqlite_terms(len(terms)), arguments).first()
    if found is None or not found[1]:
        return None
    collection, _, rows, alone, *hits = found
    narrowing = Narrowing.of(terms, hits, rows or 0)
    if not narrowing.terms:
        return []
    every = _match([term for term, count in zip(terms, hits, strict=True) if count])
    within = "" if alone else f'collection_id : "{collection}" AND '
    if narrowing.first() < len(narrowing.terms):
        return _narrowed(connection, narrowing, every, within, limit)
    ranked = connection.execute(_SQLITE_RANKING, {"match": f"{within}({every})", "limit": limit})
    return [Hit(**row) for row in ranked.mappings()]


def keyword_ranking(
    connection: sa.Connection, name: str, terms: Sequence[str], limit: int
) -> list[Hit] | None:
    """The ``limit`` chunks of collection ``name`` that best match any of ``terms`` (words,
    never query syntax), best first: BM25 on SQLite, ``ts_rank`` on PostgreSQL. None when the
    collection was never indexed, read in the ranking's first statement."""
    if terms and connection.dialect.name != "postgresql":
        return _sqlite_ranking(connection, name, terms, limit)
    collection = connection.execute(_INDEXED_ID, {"name": name}).scalar()
    if collection is None:
        return None
    if not terms:
        return []
    arguments = {"words": " or ".join(terms), "collection": collection, "limit": limit}
    return [Hit(**row) for row in connection.execute(_POSTGRESQL_RANKING, arguments).mappings()]


def chunks_by_id(connection: sa.Connection, ids: Sequence[int]) -> dict[int, Hit]:
    """The chunks ``ids`` (those that still exist), by id, scored 0."""
    query = (
        sa.select(
            knowledge_chunks.c.id,
            knowledge_files.c.path.label("source"),
            knowledge_chunks.c.heading,
            knowledge_chunks.c.position,
            knowledge_chunks.c.text,
        )
        .join(knowledge_files, knowledge_files.c.id == knowledge_chunks.c.file_id)
        .where(knowledge_chunks.c.id.in_(list(ids)))
    )
    return {row["id"]: Hit(**row, score=0.0) for row in connection.execute(query).mappings()}


def use_embedding_model(connection: sa.Connection, name: str, model: str | None) -> None:
    """Collection ``name``'s vectors are made with ``model`` (None: none are); those of another
    model are removed."""
    collection = _create(connection, name)
    table = knowledge_collections
    current = connection.execute(
        sa.select(table.c.embedding_model).where(table.c.id == collection)
    ).scalar()
    if current != model:
        connection.execute(
            knowledge_vectors.delete().where(knowledge_vectors.c.collection_id == collection)
        )
        connection.execute(
            table.update().where(table.c.id == collection).values(embedding_model=model)
        )


def unembedded(connection: sa.Connection, name: str, limit: int) -> list[Unembedded]:
    """Up to ``limit`` chunks of collection ``name`` without a vector, in id order."""
    collection = _collection_id(connection, name)
    if collection is None:
        return []
    query = (
        sa.select(knowledge_chunks.c.id, knowledge_chunks.c.heading, knowledge_chunks.c.text)
        .outerjoin(knowledge_vectors, knowledge_vectors.c.chunk_id == knowledge_chunks.c.id)
        .where(
            knowledge_chunks.c.collection_id == collection, knowledge_vectors.c.chunk_id.is_(None)
        )
        .order_by(knowledge_chunks.c.id)
        .limit(limit)
    )
    return [Unembedded(**row) for row in connection.execute(query).mappings()]


def put_vectors(connection: sa.Connection, name: str, vectors: Iterable[tuple[int, bytes]]) -> None:
    """Store each chunk's vector (chunks removed meanwhile are left out)."""
    collection = _collection_id(connection, name)
    rows = [
        {"chunk_id": chunk, "collection_id": collection, "vector": vector}
        for chunk, vector in vectors
    ]
    if collection is None or not rows:
        return
    present = sa.select(knowledge_chunks.c.id).where(
        knowledge_chunks.c.id.in_([row["chunk_id"] for row in rows])
    )
    kept = set(connection.execute(present).scalars())
    rows = [row for row in rows if row["chunk_id"] in kept]
    if rows:
        insert = dialect_insert(connection, knowledge_vectors)
        connection.execute(insert.on_conflict_do_nothing(), rows)


def vectors(
    connection: sa.Connection, name: str, model: str, after: int, limit: int
) -> list[tuple[int, bytes]]:
    """Up to ``limit`` vectors of collection ``name``'s chunks numbered after ``after``, by chunk
    id (``after`` 0 for the first page); none when its vectors were not made with ``model``."""
    table = knowledge_collections
    found = connection.execute(
        sa.select(table.c.id).where(table.c.name == name, table.c.embedding_model == model)
    ).scalar()
    if found is None:
        return []
    query = (
        sa.select(knowledge_vectors.c.chunk_id, knowledge_vectors.c.vector)
        .where(knowledge_vectors.c.collection_id == found, knowledge_vectors.c.chunk_id > after)
        .order_by(knowledge_vectors.c.chunk_id)
        .limit(limit)
    )
    return [(int(chunk), bytes(vector)) for chunk, vector in connection.execute(query)]
