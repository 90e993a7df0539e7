"""Schema migrations: each runs once, in order; a newer schema is refused, not damaged."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import MIGRATIONS, Store, autolearn, create_engine, migrate, threads
from loopengine.store import _tables as tables
from tests.store.old_schemas import migrated_to


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened:
        yield opened
    engine.dispose()


def _versions(connection: sa.Connection) -> list[int]:
    query = sa.select(tables.schema_version.c.version).order_by(tables.schema_version.c.version)
    return list(connection.execute(query).scalars())


def test_a_new_database_gets_every_table_and_the_latest_version(connection: sa.Connection) -> None:
    with connection.begin():
        assert migrate(connection) == MIGRATIONS[-1].version
    found = set(sa.inspect(connection).get_table_names())
    keyword_index = {name for name in found if name.startswith("knowledge_fts")}
    assert found - keyword_index == set(tables.metadata.tables)
    assert "knowledge_fts" in keyword_index  # FTS5's own table, beside its shadow tables
    assert _versions(connection) == [m.version for m in MIGRATIONS]


def test_migrating_again_changes_nothing(connection: sa.Connection) -> None:
    with connection.begin():
        migrate(connection)
    with connection.begin():
        migrate(connection)
    assert _versions(connection) == [m.version for m in MIGRATIONS]


def test_a_schema_newer_than_this_loopengine_is_refused(connection: sa.Connection) -> None:
    with connection.begin():
        migrate(connection)
        newer = {"version": 99, "applied_at": time.time(), "description": "from the future"}
        connection.execute(tables.schema_version.insert().values(**newer))
    with pytest.raises(StorageError, match=r"schema is version 99.*upgrade loopengine"):
        migrate(connection)


def _indexes_migrated_from(
    connection: sa.Connection, version: int, made: Sequence[str], table: str
) -> set[str]:
    """The indexes of ``table`` once a database at ``version`` whose indexes ``made`` changed
    (SQL statements) is migrated to the latest."""
    with connection.begin():
        migrated_to(connection, version)
        for statement in made:
            connection.execute(sa.text(statement))
    with connection.begin():
        migrate(connection)
    return {str(index["name"]) for index in sa.inspect(connection).get_indexes(table)}


def test_version_3_drops_the_cross_session_tool_call_index(connection: sa.Connection) -> None:
    made = ["CREATE INDEX ix_chat_messages_tool_call_id ON chat_messages (tool_call_id)"]
    indexes = _indexes_migrated_from(connection, 2, made, "chat_messages")
    assert "ix_chat_messages_tool_call_id" not in indexes


def test_version_7_scores_old_responses_under_no_instructions(connection: sa.Connection) -> None:
    with connection.begin():
        migrated_to(connection, 6)
        connection.execute(sa.text("ALTER TABLE chat_scores DROP COLUMN prompt_version"))
        connection.execute(
            sa.text(
                "INSERT INTO chat_scores (execution_id, node, category, mode, seconds, "
                "output_tokens, success, message, reply, created_at) "
                "VALUES ('e', 'OL1', 'code', 'simple', 1.0, 5, 1, 'hi', 'hello', 0.0)"
            )
        )
    with connection.begin():
        migrate(connection)
    assert connection.execute(sa.text("SELECT prompt_version FROM chat_scores")).scalar() == 0


def test_version_8_adds_the_scores_history_and_the_judged_samples(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        migrated_to(connection, 7)
        connection.execute(sa.text("ALTER TABLE chat_prompts DROP COLUMN judged_id"))
    with connection.begin():
        migrate(connection)
    inspector = sa.inspect(connection)
    columns = {column["name"] for column in inspector.get_columns("chat_prompts")}
    assert ("judged_id" in columns, inspector.has_table("score_history")) == (True, True)


def test_version_9_leaves_claims_made_before_it_as_they_were(connection: sa.Connection) -> None:
    with connection.begin():
        migrated_to(connection, 8)
        connection.execute(sa.text("DROP INDEX IF EXISTS ix_chat_scores_claimed"))
        connection.execute(sa.text("ALTER TABLE chat_scores DROP COLUMN claimed_until"))
        connection.execute(
            sa.text(
                "INSERT INTO chat_scores (execution_id, node, category, mode, seconds, "
                "output_tokens, success, message, reply, graded_at, created_at) "
                "VALUES ('e', 'OL1', 'code', 'simple', 1.0, 5, 1, 'hi', 'hello', 1.0, 0.0)"
            )
        )
    with connection.begin():
        migrate(connection)
        claimed = autolearn.claim_ungraded(connection, 5, now=1e12, until=2e12)
    indexes = {index["name"] for index in sa.inspect(connection).get_indexes("chat_scores")}
    assert (claimed, "ix_chat_scores_claimed" in indexes) == ([], True)


def test_version_10_holds_webhook_bodies(connection: sa.Connection) -> None:
    with connection.begin():
        migrated_to(connection, 9)
    with connection.begin():
        migrate(connection)
    indexes = {index["name"] for index in sa.inspect(connection).get_indexes("webhook_bodies")}
    assert indexes == {"ix_webhook_bodies_expires"}


def test_version_11_keeps_the_messages_and_what_tool_messages_say_of_their_run(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        migrated_to(connection, 10)
        for column in ("sent_at", "relance_index", "success", "error", "duration_ms"):
            connection.execute(sa.text(f"ALTER TABLE chat_messages DROP COLUMN {column}"))
        connection.execute(
            sa.text(
                "INSERT INTO chat_messages (session_id, seq, role, content, operation_id, "
                "created_at) VALUES ('s', 1, 'user', 'hi', 'op', 0.0)"
            )
        )
    with connection.begin():
        migrate(connection)
        said = {"sent_at": "2026-11-23T18:50:02Z", "relance_index": 2, "success": True}
        row = {"session_id": "s", "seq": 2, "role": "tool", "content": "{}", "name": None}
        row |= {"tool_call_id": "c", "tool_calls": None, "operation_id": "op-2", "created_at": 1.0}
        threads.insert_messages(connection, [{**row, **said, "error": None, "duration_ms": 1.5}])
    assert [m.as_json(meta=True) for m in threads.load_thread(connection, "s")] == [
        {"role": "user", "content": "hi"},
        {
            "role": "tool",
            "content": "{}",
            "tool_call_id": "c",
            "timestamp": "2026-11-23T18:50:02Z",
            "relance_index": 2,
            "success": True,
            "duration_ms": 1.5,
        },
    ]


def test_version_16_keeps_the_events_before_it_with_no_trace(connection: sa.Connection) -> None:
    with connection.begin():
        migrated_to(connection, 15)
        connection.execute(sa.text("ALTER TABLE events DROP COLUMN traceparent"))
        connection.execute(
            sa.text(
                "INSERT INTO events (name, source, data, created_at) "
                "VALUES ('disk.cleaned', 'cli', '{}', 0.0)"
            )
        )
    with connection.begin():
        migrate(connection)
    [event] = connection.execute(sa.text("SELECT name, traceparent FROM events")).all()
    assert tuple(event) == ("disk.cleaned", None)


def test_version_17_moves_the_jobs_that_ended_to_their_history(connection: sa.Connection) -> None:
    jobs = {"queued": "j1", "running": "j2", "done": "j3", "skipped": "j4"}
    with connection.begin():
        migrated_to(connection, 16)
        for status, job_id in jobs.items():
            row = {"id": job_id, "loop_id": "tick", "status": status, "not_before": 0.0}
            row |= {"attempts": 0, "cancel_requested": False, "created_at": 0.0}
            connection.execute(tables.jobs.insert().values(**row))
    with connection.begin():
        migrate(connection)
    queued = connection.execute(sa.text("SELECT id FROM jobs ORDER BY id")).scalars()
    ended = connection.execute(sa.text("SELECT id, status FROM job_history ORDER BY id")).all()
    assert list(queued) == ["j1", "j2"]
    assert [tuple(row) for row in ended] == [("j3", "done"), ("j4", "skipped")]


def test_version_18_indexes_only_the_finished_runs_of_each_loop(
    connection: sa.Connection,
) -> None:
    """Version 1 makes today's index: version 17's is made in its place."""
    made = [
        "DROP INDEX ix_executions_loop_finished",
        "CREATE INDEX ix_executions_loop_completed ON executions (loop_id, completed_at)",
    ]
    indexes = _indexes_migrated_from(connection, 17, made, "executions")
    assert "ix_executions_loop_completed" not in indexes
    assert "ix_executions_loop_finished" in indexes


def test_version_19_indexes_each_loops_jobs_in_their_order(connection: sa.Connection) -> None:
    """Version 5 makes today's index: version 18's is made in its place."""
    made = [
        "DROP INDEX ix_jobs_loop_status_created",
        "CREATE INDEX ix_jobs_loop_status ON jobs (loop_id, status)",
    ]
    indexes = _indexes_migrated_from(connection, 18, made, "jobs")
    assert "ix_jobs_loop_status" not in indexes
    assert "ix_jobs_loop_status_created" in indexes


def test_stores_opened_at_once_on_a_new_database_migrate_it_once(engine: sa.Engine) -> None:
    """Daemons started together on a fresh database: one migrates, the others wait for it and
    find the schema made (PostgreSQL created the same tables side by side, and all but one
    failed on a duplicate key)."""
    url = engine.url.render_as_string(hide_password=False)
    opened = 4
    start = threading.Barrier(opened)
    versions: list[int] = []
    errors: list[BaseException] = []

    async def open_store() -> None:
        start.wait()
        async with Store.open(url) as store:
            versions.append(store.schema_version)

    def run() -> None:
        try:
            anyio.run(open_store)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=run) for _ in range(opened)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert versions == [MIGRATIONS[-1].version] * opened
    with engine.connect() as connection:
        assert _versions(connection) == [migration.version for migration in MIGRATIONS]
