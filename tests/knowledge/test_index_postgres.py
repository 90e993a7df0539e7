"""The same knowledge base on a PostgreSQL store: its ``tsvector`` column, GIN index and
``ts_rank`` find what SQLite's FTS5 finds, and an untrusted query never errs there either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from loopengine.knowledge import index, search
from loopengine.store import Store, knowledge
from tests.knowledge.conftest import GUIDE, config, write
from tests.knowledge.test_search import HOSTILE
from tests.postgres import PostgresServer


@pytest.fixture(scope="module")
def url(shared_postgres: PostgresServer) -> Iterator[str]:
    with shared_postgres.database() as found:
        yield found


def test_postgresql_indexes_and_searches_incrementally(url: str, tmp_path: Path) -> None:
    write(tmp_path, GUIDE)

    async def steps() -> tuple[list[str], list[str], list[int], list[str]]:
        async with Store.open(url) as store:
            await index(store, config(), tmp_path)
            best = await search(store, config(), "docs", "install the package with apt", k=2)
            (tmp_path / "kb" / "faq.txt").unlink()
            (report,) = await index(store, config(), tmp_path)
            gone = await search(store, config(), "docs", "Rayleigh scattering")
            hostile = [len(await search(store, config(), "docs", query)) for query in HOSTILE]
        return [c.heading for c in best], [c.source for c in gone], hostile, [str(report.removed)]

    headings, gone, hostile, removed = anyio.run(steps)
    assert headings[0] == "Install > Linux"
    assert gone == []
    assert removed == ["1"]
    assert all(count >= 0 for count in hostile)


def test_postgresql_finds_nothing_for_a_query_of_stop_words_only(url: str, tmp_path: Path) -> None:
    write(tmp_path, GUIDE)

    async def steps() -> list[str]:
        async with Store.open(url) as store:
            await index(store, config(), tmp_path)
            return [c.source for c in await search(store, config(), "docs", "the and of")]

    assert anyio.run(steps) == []


def test_postgresql_removes_more_files_than_a_statement_binds(url: str) -> None:
    piece = (knowledge.Piece(0, "", "text"),)
    kept = [knowledge.FileChunks(path, "digest", piece) for path in ("kb/kept.md", "kb/gone.md")]
    gone = [f"kb/{n}.md" for n in range(70_000)] + ["kb/gone.md"]

    async def steps() -> dict[str, str]:
        async with Store.open(url) as store:
            await store.write(knowledge.replace_files, "many", kept, 0.0)
            await store.write(knowledge.remove_files, "many", gone)
            return await store.read(knowledge.digests, "many")

    assert anyio.run(steps) == {"kb/kept.md": "digest"}


@pytest.mark.parametrize("words", [["install"], []], ids=["words", "no word"])
def test_postgresql_tells_a_collection_never_indexed_from_one_without_matches(
    url: str, words: list[str]
) -> None:
    piece = (knowledge.Piece(0, "", "text"),)

    async def steps() -> tuple[object, object]:
        async with Store.open(url) as store:
            await store.write(
                knowledge.replace_files, "indexed", [knowledge.FileChunks("a.md", "d", piece)], 0.0
            )
            never = await store.read(knowledge.keyword_ranking, "never", words, 5)
            indexed = await store.read(knowledge.keyword_ranking, "indexed", words, 5)
        return never, indexed

    assert anyio.run(steps) == (None, [])
