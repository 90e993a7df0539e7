"""One write without an event loop (``emit``, ``metrics record``): the store created and migrated
as ``Store.open`` does, the migration and the row in one transaction, another writer's lock
waited for rather than failed on."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import MIGRATIONS, open_read_only, signals, write_once


def _event(connection: sa.Connection) -> int:
    return signals.insert_event(connection, "page.updated", "cli", {"page": 1}, 1.0)


def _names(url: str) -> list[str]:
    with open_read_only(url) as reader:
        rows = reader.read(signals.list_events, lambda _: True, 10)
    return [row.name for row in rows]


def test_a_fresh_store_is_made_migrated_and_holds_the_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'store.db'}"
    assert write_once(url, _event) == 1
    with open_read_only(url) as reader:
        assert reader.schema_version == MIGRATIONS[-1].version
    assert _names(url) == ["page.updated"]


def test_a_failed_write_leaves_no_migration_behind(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with pytest.raises(StorageError, match="no such table: nowhere"):
        write_once(url, lambda c: c.execute(sa.text("INSERT INTO nowhere VALUES (1)")))
    with open_read_only(url) as reader:
        assert reader.schema_version == 0


def test_another_writers_lock_is_waited_for(tmp_path: Path) -> None:
    file = tmp_path / "store.db"
    url = f"sqlite:///{file}"
    write_once(url, _event)
    holder = sqlite3.connect(file, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    outcome: list[object] = []

    def write() -> None:
        try:
            outcome.append(write_once(url, _event))
        except StorageError as exc:
            outcome.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(timeout=0.5)  # long enough to meet the lock, which it must wait out
    holder.execute("COMMIT")
    holder.close()
    writer.join()
    assert outcome == [2]
    assert _names(url) == ["page.updated", "page.updated"]
