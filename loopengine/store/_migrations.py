"""Versioned schema: each migration runs once, in order, inside the writer's transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._tables as tables
from loopengine.errors import StorageError
from loopengine.store.history import ENDED

__all__ = ["MIGRATIONS", "Migration", "check_readable", "migrate"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    apply: Callable[[sa.Connection], None]


_CHAT_TABLES = (
    tables.node_health,
    tables.chat_sessions,
    tables.chat_messages,
    tables.chat_operations,
)


def _chat(connection: sa.Connection) -> None:
    tables.metadata.create_all(connection, tables=list(_CHAT_TABLES))


def _drop_cross_session_index(connection: sa.Connection) -> None:
    connection.execute(sa.text("DROP INDEX IF EXISTS ix_chat_messages_tool_call_id"))


_HISTORY_INDEXES = (
    "ix_executions_started",
    "ix_executions_outcome_started",
    "ix_executions_loop_outcome_started",
)


def _history_indexes(connection: sa.Connection) -> None:
    # A new database already has them: version 1 creates the tables as defined today.
    _create_indexes(connection, tables.executions, *_HISTORY_INDEXES)


def _last_finished_index(connection: sa.Connection) -> None:
    connection.execute(sa.text("DROP INDEX IF EXISTS ix_executions_loop_completed"))
    _create_indexes(connection, tables.executions, "ix_executions_loop_finished")


def _loop_order_index(connection: sa.Connection) -> None:
    connection.execute(sa.text("DROP INDEX IF EXISTS ix_jobs_loop_status"))
    _create_indexes(connection, tables.jobs, "ix_jobs_loop_status_created")


def _create_indexes(connection: sa.Connection, table: sa.Table, *names: str) -> None:
    """Create the indexes ``names`` of ``table`` as it is defined today, unless they exist."""
    indexes = {str(index.name): index for index in table.indexes}
    for name in names:
        indexes[name].create(connection, checkfirst=True)


_DAEMON_TABLES = (
    tables.jobs,
    tables.ticks,
    tables.daemons,
    tables.paused_loops,
    tables.cursors,
)


_AUTOLEARN_TABLES = (tables.chat_scores, tables.routing_orders, tables.autolearn_history)


def _autolearn(connection: sa.Connection) -> None:
    tables.metadata.create_all(connection, tables=list(_AUTOLEARN_TABLES))


_MEMORY_TABLES = (tables.memory_exchanges, tables.memory_profiles, tables.chat_prompts)


def _memory_and_prompts(connection: sa.Connection) -> None:
    columns = {column["name"] for column in sa.inspect(connection).get_columns("chat_scores")}
    if "prompt_version" not in columns:  # a new database has it: version 6 creates today's table
        connection.execute(
            sa.text("ALTER TABLE chat_scores ADD COLUMN prompt_version INTEGER NOT NULL DEFAULT 0")
        )
    tables.metadata.create_all(connection, tables=list(_MEMORY_TABLES))


def _score_history(connection: sa.Connection) -> None:
    columns = {column["name"] for column in sa.inspect(connection).get_columns("chat_prompts")}
    if "judged_id" not in columns:  # a new database has it: version 7 creates today's table
        connection.execute(
            sa.text("ALTER TABLE chat_prompts ADD COLUMN judged_id INTEGER NOT NULL DEFAULT 0")
        )
    tables.score_history.create(connection, checkfirst=True)


def _grading_claims(connection: sa.Connection) -> None:
    columns = {column["name"] for column in sa.inspect(connection).get_columns("chat_scores")}
    if "claimed_until" not in columns:  # a new database has it: version 6 creates today's table
        connection.execute(sa.text("ALTER TABLE chat_scores ADD COLUMN claimed_until FLOAT"))
    _create_indexes(connection, tables.chat_scores, "ix_chat_scores_claimed")


def _event_traces(connection: sa.Connection) -> None:
    columns = {column["name"] for column in sa.inspect(connection).get_columns("events")}
    if "traceparent" not in columns:  # a new database has it: version 1 creates today's table
        connection.execute(sa.text("ALTER TABLE events ADD COLUMN traceparent VARCHAR(55)"))


def _webhook_bodies(connection: sa.Connection) -> None:
    tables.webhook_bodies.create(connection, checkfirst=True)


_TOOL_RUN = ("sent_at", "relance_index", "success", "error", "duration_ms")


def _tool_messages(connection: sa.Connection) -> None:
    present = {column["name"] for column in sa.inspect(connection).get_columns("chat_messages")}
    for name in _TOOL_RUN:  # a new database has them: version 2 creates today's table
        if name not in present:
            kind = tables.chat_messages.c[name].type.compile(connection.dialect)
            connection.execute(sa.text(f"ALTER TABLE chat_messages ADD COLUMN {name} {kind}"))


_OLD_JOBS = sa.table(
    "jobs",
    sa.column("id"),
    sa.column("trigger", sa.JSON),
    sa.column("envelope", sa.JSON),
    sa.column("idempotency_key"),
    sa.column("created_at"),
)
_OLD_BODIES = sa.table(
    "webhook_bodies", sa.column("key"), sa.column("idempotency_key"), sa.column("expires_at")
)
_ENVELOPE_JSON = ("scope", "payload", "constraints")
_OLD_ENVELOPES = sa.table(
    "envelopes",
    *(sa.column(name) for name in ("job_id", "trace_id", "intent", "idempotency_key")),
    *(sa.column(name) for name in ("execution_id", "created_at")),
    *(sa.column(name, sa.JSON) for name in _ENVELOPE_JSON),
)
_OLD_EXECUTIONS = sa.table(
    "executions", sa.column("id"), sa.column("trigger_type"), sa.column("trigger", sa.JSON)
)


def _rebuild(connection: sa.Connection, table: sa.Table, rows: sa.Select[Any]) -> None:
    """Recreate ``table`` as defined today, filled with ``rows`` of the old one (SQLite changes
    no column in place: the new table is made beside the old, which it then replaces)."""
    for index in table.indexes:
        connection.execute(sa.text(f"DROP INDEX IF EXISTS {index.name}"))
    new = table.to_metadata(sa.MetaData(), name=f"{table.name}_new")
    new.create(connection)
    columns = [column.name for column in rows.selected_columns]
    connection.execute(new.insert().from_select(columns, rows))
    connection.execute(sa.text(f"DROP TABLE {table.name}"))
    connection.execute(sa.text(f"ALTER TABLE {table.name}_new RENAME TO {table.name}"))


def _columns_of(table: sa.Table) -> sa.Select[Any]:
    """The old table's columns that ``table`` keeps."""
    names: list[sa.ColumnClause[Any]] = [sa.column(column.name) for column in table.c]
    return sa.select(*names).select_from(sa.table(table.name))


def _envelope_of_job(row: Any, held: dict[str, str | None]) -> Mapping[str, Any]:
    """The envelope row of a job that ran no execution yet; a key an execution outside the queue
    took (``loopengine run``) is left to it, and the job reports that execution when it runs."""
    envelope, key = row.envelope or {}, str(row.idempotency_key)
    taken = key in held
    return {
        "job_id": row.id,
        "trace_id": envelope.get("trace_id") or row.id,
        "intent": envelope.get("intent") or "",
        **{name: envelope.get(name) or {} for name in _ENVELOPE_JSON},
        "idempotency_key": f"taken:{row.id}" if taken else key,
        "execution_id": held[key] if taken else None,
        "trigger": row.trigger or {},
        "created_at": row.created_at,
    }


def _envelopes(connection: sa.Connection, triggers: bool) -> list[Mapping[str, Any]]:
    """The envelope rows kept, each with its execution's trigger (``triggers``: executions
    had theirs since version 5)."""
    started = [_OLD_EXECUTIONS.c.trigger_type]
    started += [_OLD_EXECUTIONS.c.trigger] if triggers else []
    query = sa.select(_OLD_ENVELOPES, *started).outerjoin(
        _OLD_EXECUTIONS, _OLD_EXECUTIONS.c.id == _OLD_ENVELOPES.c.execution_id
    )
    rows: list[Mapping[str, Any]] = []
    for row in connection.execute(query).mappings():
        kind, trigger = row["trigger_type"], row.get("trigger") or {}
        kept = {column.name: row[column.name] for column in _OLD_ENVELOPES.c}
        rows.append({**kept, "trigger": {"type": kind, **trigger} if kind else {}})
    return rows


def _one_envelope(connection: sa.Connection) -> None:
    inspector = sa.inspect(connection)
    if "trigger" in {column["name"] for column in inspector.get_columns("envelopes")}:
        return  # a new database: version 1 creates today's tables
    changed = ("jobs", "executions", "webhook_bodies")
    names = {name: {c["name"] for c in inspector.get_columns(name)} for name in changed}
    envelopes, old_jobs = tables.envelopes, "envelope" in names["jobs"]
    kept = _envelopes(connection, "trigger" in names["executions"])
    if old_jobs:
        held = {str(row["idempotency_key"]): row["execution_id"] for row in kept}
        unrun = sa.select(_OLD_JOBS).where(_OLD_JOBS.c.id.not_in(sa.select(envelopes.c.job_id)))
        kept += [_envelope_of_job(row, held) for row in connection.execute(unrun)]
    connection.execute(sa.text("DROP TABLE envelopes"))
    envelopes.create(connection)
    if kept:
        connection.execute(envelopes.insert(), kept)
    if "idempotency_key" in names["webhook_bodies"]:
        holder = (
            sa.select(_OLD_JOBS.c.id)
            .where(_OLD_JOBS.c.idempotency_key == _OLD_BODIES.c.idempotency_key)
            .scalar_subquery()
        )
        bodies = sa.select(_OLD_BODIES.c.key, holder.label("job_id"), _OLD_BODIES.c.expires_at)
        _rebuild(connection, tables.webhook_bodies, bodies.where(holder.is_not(None)))
    for table in (tables.jobs, tables.executions):
        if set(names[table.name]) - set(table.c.keys()):
            _rebuild(connection, table, _columns_of(table))


_OLD_PHASES = sa.table(
    "phase_results",
    *(sa.column(name) for name in ("execution_id", "seq", "phase", "started_at", "completed_at")),
    *(sa.column(name) for name in ("success", "outcome")),
    *(sa.column(name, sa.JSON) for name in ("data", "errors")),
)
_MOVED_AT_ONCE = 1000


def _phases_per_commit(connection: sa.Connection) -> None:
    """Each phase row becomes a commit's row listing that one phase, moved a thousand at a time
    so a large store is never held in memory."""
    if not sa.inspect(connection).has_table("phase_results"):
        return  # a new database: version 1 creates today's tables
    tables.phases.create(connection, checkfirst=True)
    old = _OLD_PHASES.c
    page = sa.select(_OLD_PHASES).order_by(old.execution_id, old.seq).limit(_MOVED_AT_ONCE)
    after: tuple[str, int] | None = None
    while True:
        query = page if after is None else page.where(sa.tuple_(old.execution_id, old.seq) > after)
        rows = connection.execute(query).mappings().all()
        if not rows:
            break
        connection.execute(tables.phases.insert(), [_phase_of(row) for row in rows])
        after = (rows[-1]["execution_id"], rows[-1]["seq"])
    connection.execute(sa.text("DROP TABLE phase_results"))


def _phase_of(row: Mapping[Any, Any]) -> dict[str, Any]:
    stored = {name: row[name] for name in ("phase", "started_at", "completed_at", "outcome")}
    stored |= {"success": bool(row["success"]), "data": row["data"], "errors": row["errors"]}
    return {"execution_id": row["execution_id"], "seq": row["seq"], "results": [stored]}


def _execution_logs(connection: sa.Connection) -> None:
    tables.execution_logs.create(connection, checkfirst=True)


_KNOWLEDGE_TABLES = (
    tables.knowledge_collections,
    tables.knowledge_files,
    tables.knowledge_chunks,
    tables.knowledge_vectors,
)
_FTS = "knowledge_fts"
_SQLITE_SEARCH = (
    f"CREATE VIRTUAL TABLE {_FTS} USING fts5(collection_id, heading, text, "
    "content='knowledge_chunks', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER knowledge_chunks_added AFTER INSERT ON knowledge_chunks BEGIN "
    f"INSERT INTO {_FTS}(rowid, collection_id, heading, text) "
    "VALUES (new.id, new.collection_id, new.heading, new.text); END",
    f"CREATE TRIGGER knowledge_chunks_removed AFTER DELETE ON knowledge_chunks BEGIN "
    f"INSERT INTO {_FTS}({_FTS}, rowid, collection_id, heading, text) "
    "VALUES ('delete', old.id, old.collection_id, old.heading, old.text); END",
)
"""The keyword index of SQLite: FTS5 over the chunks' own rows (external content: the text is
stored once), English stems, kept by triggers as chunks are added and removed."""
_POSTGRESQL_SEARCH = (
    "ALTER TABLE knowledge_chunks ADD COLUMN search tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english', heading || ' ' || text)) STORED",
    "CREATE INDEX ix_knowledge_chunks_search ON knowledge_chunks USING GIN (search)",
)
"""The keyword index of PostgreSQL: a generated ``tsvector`` of English stems, GIN-indexed."""


def _knowledge(connection: sa.Connection) -> None:
    tables.metadata.create_all(connection, tables=list(_KNOWLEDGE_TABLES))
    search = _POSTGRESQL_SEARCH if connection.dialect.name == "postgresql" else _SQLITE_SEARCH
    for statement in search:
        connection.exec_driver_sql(statement)


def _job_history(connection: sa.Connection) -> None:
    """History of its own for the jobs that ended: those of an existing database move over."""
    tables.job_history.create(connection, checkfirst=True)
    jobs, ended = tables.jobs, tables.jobs.c.status.in_(ENDED)
    names = [column.name for column in jobs.c]
    connection.execute(tables.job_history.insert().from_select(names, sa.select(jobs).where(ended)))
    connection.execute(jobs.delete().where(ended))


def _initial(connection: sa.Connection) -> None:
    later = {*_CHAT_TABLES, *_DAEMON_TABLES, *_AUTOLEARN_TABLES, *_MEMORY_TABLES}
    later |= set(_KNOWLEDGE_TABLES)
    later |= {tables.score_history, tables.webhook_bodies, tables.execution_logs}
    later |= {tables.job_history}
    wanted = [t for t in tables.metadata.sorted_tables if t not in later]
    tables.metadata.create_all(connection, tables=wanted)


def _daemon(connection: sa.Connection) -> None:
    # Nothing wrote trigger_states before the daemon: it is recreated with the threshold state.
    connection.execute(sa.text("DROP TABLE IF EXISTS trigger_states"))
    tables.trigger_states.create(connection)
    tables.metadata.create_all(connection, tables=list(_DAEMON_TABLES))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial tables", _initial),
    Migration(2, "LLM node health and chat threads", _chat),
    Migration(3, "tool-call ids are unique per session only", _drop_cross_session_index),
    Migration(4, "indexes for history by start time and outcome", _history_indexes),
    Migration(5, "the daemon: jobs, cron slots, daemons, pauses, cursors", _daemon),
    Migration(6, "autolearn: chat scores, routing orders, history", _autolearn),
    Migration(7, "autolearn: users' memory and versioned chat prompts", _memory_and_prompts),
    Migration(8, "autolearn: scores' history, samples judged per prompt version", _score_history),
    Migration(9, "autolearn: grading claims lapse when their process died", _grading_claims),
    Migration(10, "webhook bodies held against replays", _webhook_bodies),
    Migration(11, "tool messages keep what they say of the tool's run", _tool_messages),
    Migration(
        12,
        "one envelope per job or execution, holding its trigger and idempotency key",
        _one_envelope,
    ),
    Migration(13, "an execution's phases, a row per commit", _phases_per_commit),
    Migration(14, "what an execution's skills logged", _execution_logs),
    Migration(15, "knowledge bases: files, chunks, their keyword index and vectors", _knowledge),
    Migration(16, "events keep the trace they were appended under", _event_traces),
    Migration(17, "jobs that ended move to their own history", _job_history),
    Migration(18, "a loop's last finished execution has an index of its own", _last_finished_index),
    Migration(19, "a loop's queued jobs are indexed in their order", _loop_order_index),
)


def _current(connection: sa.Connection) -> int:
    current = connection.execute(sa.select(sa.func.max(tables.schema_version.c.version))).scalar()
    latest = MIGRATIONS[-1].version
    if current is not None and current > latest:
        raise StorageError(
            f"the database schema is version {current}, newer than this loopengine knows "
            f"({latest}): upgrade loopengine"
        )
    return current or 0


def check_readable(connection: sa.Connection) -> int:
    """The schema's version, without changing anything (0 for a database never migrated)."""
    if not sa.inspect(connection).has_table(tables.schema_version.name):
        return 0
    return _current(connection)


_MIGRATION_LOCK = 0x6C6F6F70  # "loop": the advisory lock PostgreSQL migrations take turns on


def migrate(connection: sa.Connection) -> int:
    """Bring the schema to the latest version; returns that version. Processes that start
    together take turns (SQLite's writes do already): the first migrates, the others find the
    schema it made once it commits."""
    if connection.dialect.name == "postgresql":
        lock = {"key": _MIGRATION_LOCK}
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(%(key)s)", lock)
    tables.schema_version.create(connection, checkfirst=True)
    current = _current(connection)
    for migration in MIGRATIONS:
        if migration.version > current:
            migration.apply(connection)
            connection.execute(
                tables.schema_version.insert().values(
                    version=migration.version,
                    applied_at=time.time(),
                    description=migration.description,
                )
            )
    return MIGRATIONS[-1].version
