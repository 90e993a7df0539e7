"""The store read without an event loop: what the schema holds, each read a transaction, a
newer schema refused, an older one named when a read fails on it, nothing written (a file that
does not exist is not created)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import MIGRATIONS, create_engine, migrate, open_read_only, prompts
from loopengine.store import _tables as tables
from tests.store.old_schemas import migrated_to


def _migrated(file: Path, *, extra_version: int | None = None) -> str:
    url = f"sqlite:///{file}"
    engine = create_engine(url)
    with engine.begin() as connection:
        migrate(connection)
        if extra_version is not None:
            row = {"version": extra_version, "applied_at": time.time(), "description": "future"}
            connection.execute(tables.schema_version.insert().values(**row))
    engine.dispose()
    return url


def test_a_reader_sees_the_schema_version_and_reads(tmp_path: Path) -> None:
    with open_read_only(_migrated(tmp_path / "store.db")) as reader:
        assert reader.schema_version == MIGRATIONS[-1].version
        names = reader.read(lambda c: set(sa.inspect(c).get_table_names()))
    assert set(tables.metadata.tables) <= names


def test_a_reader_cannot_write(tmp_path: Path) -> None:
    with open_read_only(_migrated(tmp_path / "store.db")) as reader, pytest.raises(StorageError):
        reader.read(lambda c: c.execute(sa.text("CREATE TABLE intruder (x)")))


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    url = _migrated(tmp_path / "store.db", extra_version=99)
    with pytest.raises(StorageError, match="version 99"), open_read_only(url):
        pass


def test_a_read_that_an_older_schema_cannot_answer_says_how_to_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    with engine.begin() as connection:
        migrated_to(connection, 6)
    engine.dispose()
    with open_read_only(url) as reader, pytest.raises(StorageError, match="upgrades it"):
        reader.read(prompts.active)
