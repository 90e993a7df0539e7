"""The fast path on PostgreSQL runs its statements on the client library: the values it writes
and reads, its transactions and its errors are the ones psycopg's cursor gives."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
import loopengine.store._pq as _pq
from loopengine.errors import StorageError, StoreUnavailable
from loopengine.store import Encoded, create_engine
from loopengine.store._database import translated
from tests.postgres import PostgresServer

_METADATA = sa.MetaData()
_ROWS = sa.Table(
    "rows",
    _METADATA,
    sa.Column("id", sa.String, primary_key=True),
    sa.Column("small", sa.Integer),
    sa.Column("big", sa.BigInteger),
    sa.Column("at", sa.Float),
    sa.Column("flag", sa.Boolean),
    sa.Column("doc", sa.JSON),
)
_INSERT = _ROWS.insert()
_SELECT = sa.select(_ROWS).where(_ROWS.c.id == sa.bindparam("id"))
_BELOW = sa.text("SELECT count(*) AS n FROM rows WHERE small > :floor")
_PREPARED = sa.text("SELECT count(*) AS n FROM pg_prepared_statements")

_VALUES: dict[str, Any] = {
    "small": -7,
    "big": 2**40,
    "at": 1795776133.907957,
    "flag": True,
    "doc": {"é": [1, 2.5, None, "🙂"], "nested": {"ok": False}},
}


@pytest.fixture(scope="module")
def engine(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with shared_postgres.database() as url:
        built = create_engine(url)
        _METADATA.create_all(built)
        yield built
        built.dispose()


@pytest.fixture
def connection(engine: sa.Engine) -> Iterator[sa.Connection]:
    with engine.connect() as opened:
        opened.exec_driver_sql("TRUNCATE rows")
        opened.commit()
        yield opened


def _insert(connection: sa.Connection, row_id: str, **values: Any) -> None:
    fastpath.execute(connection, _INSERT, {"id": row_id, **values})


def _count(engine: sa.Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(sa.select(sa.func.count()).select_from(_ROWS)).scalar_one())


def _rolled_back(connection: sa.Connection, *row_ids: str) -> None:
    """Insert ``row_ids`` in a transaction that then fails."""
    with connection.begin():
        for row_id in row_ids:
            _insert(connection, row_id)
        raise RuntimeError("rolled back")


def test_values_read_back_as_the_cursor_reads_them(connection: sa.Connection) -> None:
    with connection.begin():
        _insert(connection, "a", **_VALUES)
        _insert(connection, "b", small=None, big=None, at=None, flag=None, doc=None)
    with connection.begin():
        for row_id in ("a", "b"):
            fast = fastpath.fetch_one(connection, _SELECT, {"id": row_id})
            cursor = connection.execute(_SELECT, {"id": row_id}).mappings().one()
            assert fast == dict(cursor)
        assert fastpath.fetch_one(connection, _SELECT, {"id": "a"}) == {"id": "a", **_VALUES}


def test_encoded_json_is_written_as_it_is(connection: sa.Connection) -> None:
    with connection.begin():
        _insert(connection, "a", doc=Encoded('{"kept":"as sent"}'))
        row = fastpath.fetch_one(connection, _SELECT, {"id": "a"})
    assert row is not None
    assert row["doc"] == {"kept": "as sent"}


def test_text_holding_a_nul_byte_is_refused_not_cut(connection: sa.Connection) -> None:
    with pytest.raises(psycopg.DataError, match="NUL"), connection.begin():
        _insert(connection, "a\x00b")


def test_a_transaction_the_fast_path_opened_rolls_back_whole(
    engine: sa.Engine, connection: sa.Connection
) -> None:
    with pytest.raises(RuntimeError):
        _rolled_back(connection, "a", "b")
    assert _count(engine) == 0
    with connection.begin():
        _insert(connection, "c")
    assert _count(engine) == 1


def test_statements_outlive_a_rollback_and_are_prepared_once(connection: sa.Connection) -> None:
    with connection.begin():
        _insert(connection, "kept")
        for _ in range(8):
            connection.execute(sa.select(_ROWS.c.id)).all()
    with pytest.raises(RuntimeError):
        _rolled_back(connection, "undone")
    with connection.begin():
        _insert(connection, "after")
        prepared = fastpath.fetch_all(connection, _PREPARED, {})
    assert prepared == [{"n": 2}]


def test_an_integer_beyond_the_column_s_type_is_bound_as_the_cursor_binds_it(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        _insert(connection, "a", small=5)
        assert fastpath.fetch_one(connection, _BELOW, {"floor": 0}) == {"n": 1}
        assert fastpath.fetch_one(connection, _BELOW, {"floor": -(2**31) - 1}) == {"n": 1}
        assert fastpath.fetch_one(connection, _BELOW, {"floor": 2**40}) == {"n": 0}


def test_the_row_count_is_the_statement_s(connection: sa.Connection) -> None:
    update = _ROWS.update().where(_ROWS.c.small == sa.bindparam("was")).values(small=2)
    with connection.begin():
        _insert(connection, "a", small=1)
        _insert(connection, "b", small=1)
        assert fastpath.execute(connection, update, {"was": 1}) == 2
        assert fastpath.execute(connection, update, {"was": 1}) == 0


def test_a_failed_statement_raises_the_driver_s_error(
    engine: sa.Engine, connection: sa.Connection
) -> None:
    with pytest.raises(psycopg.errors.UniqueViolation) as raised:
        _rolled_back(connection, "a", "a")
    assert isinstance(translated(raised.value, psycopg.Error), StorageError)
    with connection.begin():
        _insert(connection, "b")
    assert _count(engine) == 1


_WRITES: dict[str, Callable[[sa.Connection], object]] = {
    "alone": lambda connection: _insert(connection, "a"),
    "together": lambda connection: fastpath.execute_all(
        connection, [(_INSERT, {"id": "a"}), (_INSERT, {"id": "b"})]
    ),
}


@pytest.mark.parametrize("write", _WRITES.values(), ids=_WRITES.keys())
def test_a_connection_cut_under_statements_is_an_outage(
    engine: sa.Engine, connection: sa.Connection, write: Callable[[sa.Connection], object]
) -> None:
    driver: Any = connection.connection.driver_connection
    with engine.connect() as other:
        other.execute(
            sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": driver.info.backend_pid}
        )
        other.commit()
    with pytest.raises(psycopg.OperationalError) as raised:
        write(connection)
    assert isinstance(translated(raised.value, psycopg.Error), StoreUnavailable)
    connection.invalidate()


def test_a_statement_deallocated_under_it_fails_once_then_is_prepared_again(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        _insert(connection, "a")
    connection.exec_driver_sql("DEALLOCATE ALL")
    connection.commit()
    with pytest.raises(psycopg.errors.InvalidSqlStatementName), connection.begin():
        _insert(connection, "b")
    with connection.begin():
        _insert(connection, "c")
    assert _count(connection.engine) == 2


def test_an_autocommit_connection_runs_them_on_the_cursor(engine: sa.Engine) -> None:
    """On an engine of its own: the isolation level a connection is given stays on its driver,
    and a connection whose level is set runs them on the cursor too."""
    own = create_engine(engine.url.render_as_string(hide_password=False))
    with own.connect() as opened:
        autocommit = opened.execution_options(isolation_level="AUTOCOMMIT")
        _insert(autocommit, "auto", small=3)
        row = fastpath.fetch_one(autocommit, _SELECT, {"id": "auto"})
        assert row is not None
        assert row["small"] == 3
        gone = _ROWS.delete().where(_ROWS.c.id == sa.bindparam("id"))
        assert fastpath.execute(autocommit, gone, {"id": "auto"}) == 1
    own.dispose()


class _Counted:
    """A connection's client library, its round trips counted (a pipeline or one statement)."""

    def __init__(self, pgconn: Any) -> None:
        self.pgconn = pgconn
        self.trips = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pgconn, name)

    def pipeline_sync(self) -> None:
        self.trips += 1
        self.pgconn.pipeline_sync()

    def exec_prepared(self, *args: Any) -> Any:
        self.trips += 1
        return self.pgconn.exec_prepared(*args)

    def prepare(self, *args: Any) -> Any:
        self.trips += 1
        return self.pgconn.prepare(*args)


@pytest.fixture
def counted(connection: sa.Connection) -> Iterator[_Counted]:
    """The round trips of ``connection``'s fast path."""
    session = _pq.session(connection)
    assert session is not None
    library = session.pgconn
    session.pgconn = counting = _Counted(library)
    yield counting
    session.pgconn = library


_RAISE = _ROWS.update().where(_ROWS.c.id == sa.bindparam("was")).values(small=_ROWS.c.small + 1)


def test_statements_run_together_take_one_round_trip_with_their_begin_and_query(
    connection: sa.Connection, counted: _Counted
) -> None:
    inserts = [(_INSERT, {"id": row_id, "small": 1}) for row_id in ("a", "b")]
    with connection.begin():
        counts, [first, second] = fastpath.execute_all(
            connection,
            [*inserts, (_RAISE, {"was": "a"})],
            then=[(_SELECT, {"id": "a"}), (_SELECT, {"id": "b"})],
        )
        assert counted.trips == 1
    assert counts == [1, 1, 1]
    assert [row["small"] for row in (*first, *second)] == [2, 1]


def test_a_failure_among_statements_run_together_is_raised_and_none_after_it_runs(
    engine: sa.Engine, connection: sa.Connection
) -> None:
    twice = [(_INSERT, {"id": row_id}) for row_id in ("a", "a", "b")]
    with pytest.raises(psycopg.errors.UniqueViolation), connection.begin():
        fastpath.execute_all(connection, twice)
    with connection.begin():
        assert fastpath.execute_all(connection, [(_INSERT, {"id": "c"})]) == ([1], [])
    assert _count(engine) == 1


def test_a_statement_prepared_behind_a_failure_is_prepared_again_when_it_runs(
    connection: sa.Connection,
) -> None:
    gone = _ROWS.delete().where(_ROWS.c.id == sa.bindparam("id"))
    with connection.begin():
        _insert(connection, "a")
    failing = [(_INSERT, {"id": "a"}), (gone, {"id": "a"})]
    with pytest.raises(psycopg.errors.UniqueViolation), connection.begin():
        fastpath.execute_all(connection, failing)
    with connection.begin():
        assert fastpath.execute(connection, gone, {"id": "a"}) == 1


def test_a_transaction_committed_on_the_client_library_is_seen_and_ends_quietly(
    engine: sa.Engine, connection: sa.Connection
) -> None:
    """SQLAlchemy's commit, as the block ends, finds no transaction left."""
    with connection.begin():
        _insert(connection, "a")
        fastpath.commit(connection)
        assert _count(engine) == 1
    with connection.begin():
        _insert(connection, "b")
    assert _count(engine) == 2


class _Interrupted(_Counted):
    """A client library interrupted as it reads the pipeline's answers (a signal, a bug)."""

    def consume_input(self) -> None:
        raise KeyboardInterrupt


def test_a_pipeline_interrupted_halfway_closes_its_connection_which_is_replaced(
    engine: sa.Engine,
) -> None:
    cut = [(_INSERT, {"id": "cut-1"}), (_INSERT, {"id": "cut-2"})]
    with engine.connect() as connection:
        session = _pq.session(connection)
        assert session is not None
        session.pgconn = _Interrupted(session.pgconn)
        with pytest.raises(KeyboardInterrupt):
            fastpath.execute_all(connection, cut)
        assert connection.connection.driver_connection.closed  # type: ignore[union-attr]
        connection.invalidate()
    with engine.begin() as connection:
        _insert(connection, "after-cut")
        kept = connection.execute(sa.select(_ROWS.c.id).where(_ROWS.c.id.like("%cut%")))
        assert sorted(kept.scalars()) == ["after-cut"]
