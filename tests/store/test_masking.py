"""Every write to the store masks known secrets: JSON columns through the one encoder, free-text
columns through their type, whether SQLAlchemy or the hot path writes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine._secrets import remember
from loopengine.store import AuditEntry, create_engine, migrate, signals
from loopengine.store import _fastpath as fastpath
from loopengine.store._tables import approvals, reviews

SECRET = "db-2c9f4e7a1b0d8356"


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    remember(SECRET)
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.begin() as opened:
        migrate(opened)
        yield opened
    engine.dispose()


def _raw(connection: sa.Connection, query: str) -> str:
    return str(connection.execute(sa.text(query)).scalar_one())


class _Opaque:
    def __str__(self) -> str:
        return f"opaque {SECRET}"


def test_a_json_column_is_masked_keys_values_and_unknown_objects(
    connection: sa.Connection,
) -> None:
    signals.insert_event(connection, "a.b", "api", {SECRET: [SECRET, _Opaque()]}, 0.0)
    assert _raw(connection, "SELECT data FROM events") == '{"***":["***","opaque ***"]}'


def test_a_json_column_the_hot_path_writes_is_masked(connection: sa.Connection) -> None:
    AuditEntry("e1", "l1", {"said": f"key {SECRET}"}, 0.0).apply(connection)
    assert _raw(connection, "SELECT record FROM audit") == '{"said":"key ***"}'


def test_a_text_column_is_masked(connection: sa.Connection) -> None:
    row = {"execution_id": "e1", "loop_id": "l1", "action": "a", "status": "waiting"}
    row |= {"requested_at": 0.0, "deadline": 1.0, "note": f"approved, key {SECRET}"}
    connection.execute(approvals.insert().values(**row))
    assert _raw(connection, "SELECT note FROM approvals") == "approved, key ***"


def test_a_text_column_the_hot_path_writes_is_masked(connection: sa.Connection) -> None:
    row = {"execution_id": "e1", "loop_id": "l1", "reason": SECRET, "status": "open"}
    fastpath.execute(connection, reviews.insert(), {**row, "created_at": 0.0})
    assert _raw(connection, "SELECT reason FROM reviews") == "***"
