"""Indexing is incremental: unchanged files are skipped, changed ones cut again, deleted ones
removed; a batch is one transaction, so a run that fails keeps what it wrote."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.errors import NotFound
from loopengine.knowledge import _index, _sources, index, search
from loopengine.store import knowledge
from loopengine.testing import memory_store
from tests.knowledge.conftest import GUIDE, config, write

pytestmark = pytest.mark.anyio


async def test_a_first_run_cuts_every_file_and_the_next_skips_them_all(tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        (first,) = await index(store, config(), tmp_path)
        (second,) = await index(store, config(), tmp_path)
    assert (first.files, first.changed, first.unchanged, first.chunks) == (3, 3, 0, 4)
    assert (second.files, second.changed, second.unchanged, second.chunks) == (3, 0, 3, 0)


async def test_a_changed_file_is_cut_again_and_a_deleted_one_removed(tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, config(), tmp_path)
        write(tmp_path, {"kb/usage.md": "# Usage\n\nNow with a gateway option.\n"})
        (tmp_path / "kb" / "faq.txt").unlink()
        (report,) = await index(store, config(), tmp_path)
        found = await search(store, config(), "docs", "gateway")
        old = await search(store, config(), "docs", "Rayleigh")
        (summary,) = await store.read(knowledge.summaries)
    assert (report.changed, report.unchanged, report.removed) == (1, 1, 1)
    assert [chunk.source for chunk in found] == ["kb/usage.md"]
    assert old == []
    assert (summary.files, summary.chunks) == (2, 3)


async def test_new_chunking_cuts_every_file_again(tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, config(), tmp_path)
        (report,) = await index(store, config(chunk={"size": 200, "overlap": 0}), tmp_path)
    assert report.changed == 3


async def test_an_unreadable_file_is_reported_and_its_old_chunks_removed(tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, config(), tmp_path)
        (tmp_path / "kb" / "faq.txt").write_bytes(b"\x00\x01binary now")
        (report,) = await index(store, config(), tmp_path)
        gone = await search(store, config(), "docs", "Rayleigh")
    assert [str(item) for item in report.skipped] == ["kb/faq.txt: binary, not text"]
    assert (report.removed, gone) == (1, [])


async def test_unreadable_files_past_max_skipped_are_counted_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sources, "MAX_SKIPPED", 1)
    write(tmp_path, {"kb/a.txt": "\x00a", "kb/b.txt": "\x00b", "kb/c.md": "fine"})
    async with memory_store() as store:
        (report,) = await index(store, config(), tmp_path)
    listed = report.as_json()
    assert (listed["skipped"], listed["skipped_more"]) == (
        [{"source": "kb/a.txt", "reason": "binary, not text"}],
        1,
    )
    assert (report.files, len(report.skipped)) == (3, 2)


async def test_a_run_that_fails_keeps_the_batches_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {f"kb/{n}.md": f"# Page {n}\n\nword{n} here.\n" for n in range(5)})
    monkeypatch.setattr(_index, "BATCH_FILES", 2)
    cut = _index.cut

    def fail_on_the_fifth(*args: object) -> object:
        if "word4" in str(args[0]):
            raise RuntimeError("the process dies here")
        return cut(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_index, "cut", fail_on_the_fifth)
    async with memory_store() as store:
        with pytest.raises(RuntimeError):
            await index(store, config(), tmp_path)
        kept = await store.read(knowledge.digests, "docs")
        monkeypatch.setattr(_index, "cut", cut)
        (report,) = await index(store, config(), tmp_path)
    assert sorted(kept) == ["kb/0.md", "kb/1.md", "kb/2.md", "kb/3.md"]
    assert (report.changed, report.unchanged) == (1, 4)


async def test_progress_is_told_each_batch_and_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {f"kb/{n}.md": f"page {n}" for n in range(5)})
    monkeypatch.setattr(_index, "BATCH_FILES", 2)
    told: list[tuple[str, int, int]] = []
    async with memory_store() as store:
        await index(store, config(), tmp_path, progress=lambda *seen: told.append(seen))
    assert told == [("docs", 2, 5), ("docs", 4, 5), ("docs", 5, 5)]


async def test_an_unknown_collection_names_the_known_ones(tmp_path: Path) -> None:
    async with memory_store() as store:
        with pytest.raises(NotFound, match=r"no knowledge collection 'doc'; did you mean 'docs'"):
            await index(store, config(), tmp_path, ["doc"])


def _bound_parameters(connection: sa.Connection, most: int) -> None:
    """A statement of this connection binds at most ``most`` parameters (SQLite's own bound is
    32,766 by default, PostgreSQL's 65,535)."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, most)


def _file(path: str) -> knowledge.FileChunks:
    return knowledge.FileChunks(path, "digest", (knowledge.Piece(0, "", "text"),))


async def test_more_files_removed_than_a_statement_binds_are_removed_a_batch_at_a_time() -> None:
    async with memory_store() as store:
        kept = [_file("kb/kept.md"), _file("kb/gone.md")]
        await store.write(knowledge.replace_files, "docs", kept, 0.0)
        await store.write(_bound_parameters, knowledge.REMOVED_AT_ONCE + 1)
        gone = [f"kb/{n}.md" for n in range(3 * knowledge.REMOVED_AT_ONCE)] + ["kb/gone.md"]
        await store.write(knowledge.remove_files, "docs", gone)
        assert await store.read(knowledge.digests, "docs") == {"kb/kept.md": "digest"}
