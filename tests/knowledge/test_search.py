"""Searching a collection: best chunks first, each with its file, heading path and position;
an untrusted query never errs, and is bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopengine.contract import Config
from loopengine.errors import ContractError, NotFound
from loopengine.knowledge import MAX_K, Chunk, index, search
from loopengine.store import Store, knowledge
from loopengine.testing import memory_store
from tests.knowledge.conftest import GUIDE, config, write

pytestmark = pytest.mark.anyio
HOSTILE = ['"', "*", "NEAR(", "AND OR", "a OR", "docs:x", '"unterminated', "^", "-x", "()", "\x00"]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    write(tmp_path, GUIDE)
    async with memory_store() as opened:
        await index(opened, config(), tmp_path)
        yield opened


async def test_the_best_chunk_comes_first_with_where_it_is(store: Store) -> None:
    found = await search(store, config(), "docs", "install the package with apt", k=2)
    assert found[0] == Chunk(
        "kb/install.md",
        "Install > Linux",
        1,
        "Use apt to install the package on Debian.",
        found[0].score,
    )
    assert found[0].score > found[1].score > 0


async def test_k_bounds_the_chunks_returned(store: Store) -> None:
    assert len(await search(store, config(), "docs", "install daemon loop file", k=1)) == 1


@pytest.mark.parametrize("query", HOSTILE)
async def test_query_syntax_is_searched_as_words_or_nothing(store: Store, query: str) -> None:
    assert isinstance(await search(store, config(), "docs", query), list)


async def test_a_query_of_only_punctuation_finds_nothing(store: Store) -> None:
    assert await search(store, config(), "docs", "?!* \"' () :^") == []


async def test_a_word_in_no_chunk_finds_nothing(store: Store) -> None:
    assert await search(store, config(), "docs", "xylophone") == []


async def test_unicode_is_searched_as_written(store: Store, tmp_path: Path) -> None:
    write(tmp_path, {"kb/fr.md": "# Été\n\nLa crème brûlée se déguste froide.\n"})
    await index(store, config(), tmp_path)
    found = await search(store, config(), "docs", "creme brulee")
    assert [chunk.source for chunk in found] == ["kb/fr.md"]


async def test_a_query_over_the_bound_is_refused(store: Store) -> None:
    with pytest.raises(ContractError, match=r"the query is 10,240 characters: at most 2,000"):
        await search(store, config(), "docs", "x" * 10_240)


@pytest.mark.parametrize("k", [0, MAX_K + 1])
async def test_k_outside_its_bounds_is_refused(store: Store, k: int) -> None:
    with pytest.raises(ContractError, match=f"k {k}: write a whole number from 1 to {MAX_K}"):
        await search(store, config(), "docs", "install", k)


async def test_a_collection_the_config_does_not_name_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match=r"no knowledge collection 'manuals' \(collections: docs\)"):
        await search(store, config(), "manuals", "install")


@pytest.mark.parametrize("query", ["install", "?!"], ids=["words", "no word"])
async def test_a_collection_never_indexed_says_how_to_index_it(query: str) -> None:
    async with memory_store() as empty:
        with pytest.raises(
            NotFound,
            match=r"^collection 'docs' was never indexed: run `loopengine knowledge "
            r"index docs`$",
        ):
            await search(empty, config(), "docs", query)


async def test_a_collection_whose_first_index_run_was_cut_short_is_searched(
    tmp_path: Path,
) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await store.write(knowledge.replace_files, "docs", [_file("kb/usage.md", "loop")], 0.0)
        found = await search(store, config(), "docs", "loop")
    assert [chunk.source for chunk in found] == ["kb/usage.md"]


def _file(path: str, text: str) -> knowledge.FileChunks:
    return knowledge.FileChunks(path, "digest", (knowledge.Piece(0, "", text),))


TWO = Config.model_validate(
    {"knowledge": {"docs": {"sources": ["kb"]}, "other": {"sources": ["kb"]}}}
)


@pytest.mark.parametrize(
    ("collections", "name", "query"),
    [(config(), "docs", "1"), (TWO, "docs", "1"), (TWO, "other", "2"), (TWO, "docs", "2")],
    ids=["alone", "first of two", "second of two", "the other's id"],
)
async def test_a_collections_id_is_no_word_of_its_chunks(
    tmp_path: Path, collections: Config, name: str, query: str
) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, collections, tmp_path)
        assert await search(store, collections, name, query) == []


async def test_a_number_is_found_in_headings_and_text(tmp_path: Path) -> None:
    write(tmp_path, GUIDE | {"kb/release.md": "# Release 1\n\nThe first one.\n"})
    async with memory_store() as store:
        await index(store, config(), tmp_path)
        found = await search(store, config(), "docs", "1 daemon")
    assert sorted(chunk.source for chunk in found) == ["kb/install.md", "kb/release.md"]
