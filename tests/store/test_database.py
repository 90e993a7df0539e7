"""The SQLite sync level chosen by the URL's ``synchronous`` parameter."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from loopengine.errors import StorageError
from loopengine.store import create_engine, read_only_query, select_from

_LEVELS = {"off": 0, "normal": 1, "full": 2, "extra": 3}


def _pragmas(url: str) -> tuple[int, str]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            synchronous = connection.exec_driver_sql("PRAGMA synchronous").scalar()
            journal = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
    finally:
        engine.dispose()
    return synchronous, journal


def test_a_file_database_syncs_fully_by_default(tmp_path: Path) -> None:
    assert _pragmas(f"sqlite:///{tmp_path / 'store.db'}") == (_LEVELS["full"], "wal")


@pytest.mark.parametrize(("name", "level"), [*_LEVELS.items(), ("NORMAL", 1)])
def test_the_url_chooses_the_level(tmp_path: Path, name: str, level: int) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}?synchronous={name}"
    assert _pragmas(url) == (level, "wal")


def test_a_connection_waits_for_the_switch_to_wal_another_one_holds_up(tmp_path: Path) -> None:
    """SQLite refuses the switch at once while another connection writes to a new database
    (daemons started together), without waiting as it does for other locks."""
    path = tmp_path / "store.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x INTEGER)")
    other.execute("BEGIN IMMEDIATE")
    finished = threading.Timer(0.2, other.execute, ("COMMIT",))
    finished.start()
    try:
        assert _pragmas(f"sqlite:///{path}") == (_LEVELS["full"], "wal")
    finally:
        finished.join()
        other.close()


def test_the_parameter_is_not_passed_on(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}?synchronous=normal")
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    finally:
        engine.dispose()
    assert "synchronous" not in engine.url.query
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["store.db"]


def test_an_in_memory_database_takes_the_parameter_too() -> None:
    engine = create_engine("sqlite://?synchronous=off")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 0
    finally:
        engine.dispose()


@pytest.mark.parametrize("query", ["synchronous=fast", "synchronous=1&synchronous=2"])
def test_an_unknown_level_is_refused_with_the_allowed_ones(tmp_path: Path, query: str) -> None:
    with pytest.raises(
        StorageError, match=r"^invalid synchronous=.*: use one of off, normal, full, extra$"
    ):
        create_engine(f"sqlite:///{tmp_path / 'store.db'}?{query}")


def test_a_runaway_read_only_query_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "x.db").close()
    runaway = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    )
    with pytest.raises(StorageError, match="interrupted"):
        read_only_query(f"sqlite:///{tmp_path / 'x.db'}", lambda _: runaway, 10, timeout_s=0.2)


def test_a_select_from_a_table_quotes_its_name_and_keeps_the_limit(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "site.db") as db:
        db.execute('create table "odd ""name""" (n integer)')
        db.executemany('insert into "odd ""name""" values (?)', [(1,), (2,), (3,)])
    url = f"sqlite:///{tmp_path / 'site.db'}"
    assert select_from(url, 'odd "name"', "n > 1", 1) == [{"n": 2}]
    assert select_from(url, 'odd "name"', None, 5) == [{"n": 1}, {"n": 2}, {"n": 3}]
