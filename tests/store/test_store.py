"""The store: operations run in order, writes group, a busy database never blocks the event loop."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import Store, flags, open_read_only, write_once

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_a_write_waits_for_another_process_lock_without_blocking_the_loop(
    tmp_path: Path, synchronous: str
) -> None:
    path = tmp_path / "busy.db"
    async with Store.open(f"sqlite:///{path}?synchronous={synchronous}") as store:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")

        async def release_after_ten_turns_of_the_loop() -> None:
            for _ in range(10):
                await anyio.sleep(0.01)
            other.execute("COMMIT")

        async with anyio.create_task_group() as group:
            group.start_soon(release_after_ten_turns_of_the_loop)
            await store.write(lambda c: flags.set_flag(c, "f", True, 1.0))
        other.close()
        assert await store.read(lambda c: flags.flag_enabled(c, "f")) is True


async def test_a_failing_write_in_a_group_fails_alone(tmp_path: Path) -> None:
    async with Store.open(f"sqlite:///{tmp_path / 'g.db'}?synchronous=normal") as store:
        first = store.submit(lambda c: flags.set_flag(c, "a", True, 1.0))
        broken = store.submit(lambda c: c.exec_driver_sql("INSERT INTO nowhere VALUES (1)"))
        last = store.submit(lambda c: flags.set_flag(c, "b", True, 1.0))
        await first.wait()
        await last.wait()
        with pytest.raises(StorageError, match="no such table"):
            await broken.wait()
        names = await store.read(lambda c: [flag.name for flag in flags.list_flags(c)])
    assert names == ["a", "b"]


async def test_a_leading_write_starts_its_transaction_and_those_behind_it_join_it(
    tmp_path: Path,
) -> None:
    async with Store.open(f"sqlite:///{tmp_path / 'l.db'}?synchronous=normal") as store:
        begun: list[int] = []
        sa.event.listen(store._connection, "begin", lambda _connection: begun.append(0))
        ran: list[tuple[str, int]] = []
        writes = [
            store.submit(lambda c: ran.append(("first", len(begun)))),
            store.lead(lambda c: ran.append(("leading", len(begun)))),
            store.submit(lambda c: ran.append(("behind", len(begun)))),
        ]
        for write in writes:
            await write.wait()
    assert ran == [("first", 1), ("leading", 2), ("behind", 2)]


async def test_an_operation_is_handed_over_with_its_arguments(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    async with Store.open(url) as store:
        await store.write(flags.set_flag, "async", True, at=1.0)
        assert await store.read(flags.flag_enabled, "async")
    write_once(url, flags.set_flag, name="once", enabled=True, at=2.0)
    with open_read_only(url) as reader:
        assert reader.read(flags.flag_enabled, name="once")


async def test_operations_run_in_the_order_submitted(tmp_path: Path) -> None:
    async with Store.open(f"sqlite:///{tmp_path / 'o.db'}") as store:
        seen: list[int] = []
        pending = [store.submit(lambda c, i=i: seen.append(i)) for i in range(20)]
        await store.read(lambda c: seen.append(99))
        for each in pending:
            await each.wait()
    assert seen == [*range(20), 99]


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_what_is_remembered_is_recalled_until_a_write(
    tmp_path: Path, synchronous: str
) -> None:
    async with Store.open(f"sqlite:///{tmp_path / 'm.db'}?synchronous={synchronous}") as store:
        await store.write(lambda c: flags.set_flag(c, "f", True, 1.0))
        pending = store.submit(lambda c: flags.set_flag(c, "g", True, 1.0))
        pending.on_done = lambda error: store.remember("key", "value")
        await pending.wait()
        assert store.recall("key") == "value"
        await store.write(lambda c: flags.set_flag(c, "h", True, 1.0))
        assert store.recall("key") is None


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_a_commit_by_another_process_forgets_what_was_remembered(
    tmp_path: Path, synchronous: str
) -> None:
    path = tmp_path / "m.db"
    async with Store.open(f"sqlite:///{path}?synchronous={synchronous}") as store:
        pending = store.submit(lambda c: flags.set_flag(c, "g", True, 1.0))
        pending.on_done = lambda error: store.remember("key", "value")
        await pending.wait()
        with sqlite3.connect(path) as other:
            other.execute("UPDATE feature_flags SET enabled = 0")
        assert store.recall("key") is None
