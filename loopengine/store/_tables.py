"""The store's tables (SQLAlchemy Core). Times are UTC epoch seconds; documents are JSON; free
text that may quote what someone sent is ``MaskedText``. Both are written with secrets masked."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store._database import MaskedText

__all__ = [
    "approvals",
    "artifacts",
    "audit",
    "autolearn_history",
    "chat_messages",
    "chat_operations",
    "chat_prompts",
    "chat_scores",
    "chat_sessions",
    "context_cache",
    "cursors",
    "daemons",
    "envelopes",
    "events",
    "execution_logs",
    "executions",
    "feature_flags",
    "job_history",
    "jobs",
    "knowledge_chunks",
    "knowledge_collections",
    "knowledge_files",
    "knowledge_vectors",
    "loop_state",
    "memory_exchanges",
    "memory_profiles",
    "metadata",
    "metrics",
    "node_health",
    "paused_loops",
    "phases",
    "reviews",
    "routing_orders",
    "schema_version",
    "score_history",
    "ticks",
    "trigger_states",
    "webhook_bodies",
]

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("applied_at", sa.Float, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
)

FINISHED_RUN = "status = 'finished' AND dry_run = false"
"""An execution that finished and was not a dry run, as SQL both databases read, written into
the queries that ``ix_executions_loop_finished`` serves (a parameter would not match it)."""

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("loop_version", sa.String(64), nullable=False),
    sa.Column("loop_file", sa.Text, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("outcome", sa.String(32)),
    sa.Column("job_id", sa.String(32), nullable=False),
    sa.Column("trigger_type", sa.String(32), nullable=False),
    sa.Column("durability", sa.String(16), nullable=False),
    sa.Column("dry_run", sa.Boolean, nullable=False, default=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("completed_at", sa.Float),
    sa.Column("last_phase", sa.String(16)),
    sa.Column("owner", sa.String(200)),
    sa.Column("context", sa.JSON, nullable=False),
    sa.Column("usage", sa.JSON, nullable=False),
    sa.Column("error", MaskedText),
    sa.Index("ix_executions_loop_started", "loop_id", "started_at"),
    # The loop's last finished execution (where its next one starts from), the only rows it
    # reads: an index on every execution made PostgreSQL read them all (migration 18).
    sa.Index(
        "ix_executions_loop_finished",
        "loop_id",
        "completed_at",
        postgresql_where=sa.text(FINISHED_RUN),
        sqlite_where=sa.text(FINISHED_RUN),
    ),
    sa.Index("ix_executions_status", "status"),
    # `history`: newest first, optionally by outcome, optionally within one loop (migration 4).
    sa.Index("ix_executions_started", "started_at"),
    sa.Index("ix_executions_outcome_started", "outcome", "started_at"),
    sa.Index("ix_executions_loop_outcome_started", "loop_id", "outcome", "started_at"),
)

# An execution's phase results, a row per commit: ``results`` holds the phases that commit
# recorded, in order, as ``PhaseResult.stored`` makes them; ``seq`` numbers the last of them, so
# an execution committed once keeps its seven phases in one row (migration 13).
phases = sa.Table(
    "phases",
    metadata,
    sa.Column("execution_id", sa.String(32), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("results", sa.JSON, nullable=False),
)

# What an execution's skills logged (``ctx.logger``), INFO and above, in order of ``id``; the
# phase and step say where (migration 14).
execution_logs = sa.Table(
    "execution_logs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("level", sa.String(8), nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("step", sa.String(200), nullable=False),
    sa.Column("message", MaskedText, nullable=False),
    sa.Index("ix_execution_logs_execution", "execution_id", "id"),
)

# What a job or an execution is asked to do, once: a queued job's row and its execution name it
# by ``job_id``; ``execution_id`` is the execution that took its idempotency key, ``trigger`` how
# it was started: {type, id?, scheduled_for?, event?, metric?, data?} (migration 12).
envelopes = sa.Table(
    "envelopes",
    metadata,
    sa.Column("job_id", sa.String(32), primary_key=True),
    sa.Column("trace_id", sa.String(32), nullable=False),
    sa.Column("intent", sa.String(200), nullable=False),
    sa.Column("scope", sa.JSON, nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("constraints", sa.JSON, nullable=False),
    sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("trigger", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("execution_id", sa.String(32), primary_key=True),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("action", sa.String(200), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("requested_at", sa.Float, nullable=False),
    sa.Column("deadline", sa.Float, nullable=False),
    sa.Column("decided_at", sa.Float),
    sa.Column("note", MaskedText),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("source", sa.String(200), nullable=False),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("created_at", sa.Float, nullable=False),
    # The W3C traceparent the event was appended under: the loops it fires continue that trace.
    sa.Column("traceparent", sa.String(55)),
    sa.Index("ix_events_name_created", "name", "created_at"),
)

metrics = sa.Table(
    "metrics",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("labels", sa.JSON, nullable=False),
    sa.Column("recorded_at", sa.Float, nullable=False),
    sa.Index("ix_metrics_name_recorded", "name", "recorded_at"),
)

loop_state = sa.Table(
    "loop_state",
    metadata,
    sa.Column("loop_id", sa.String(200), primary_key=True),
    sa.Column("values", sa.JSON, nullable=False),
    sa.Column("samples", sa.Integer, nullable=False),
    sa.Column("last_adjusted_at", sa.Float),
    sa.Column("updated_at", sa.Float, nullable=False),
)

feature_flags = sa.Table(
    "feature_flags",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

audit = sa.Table(
    "audit",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("record", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_audit_loop_created", "loop_id", "created_at"),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("storage", sa.String(200), nullable=False),
    sa.Column("location", sa.Text, nullable=False),
    sa.Column("indexed", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float),
    sa.Index("ix_artifacts_expires", "expires_at"),
)

context_cache = sa.Table(
    "context_cache",
    metadata,
    sa.Column("key", sa.String(400), primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
)

trigger_states = sa.Table(
    "trigger_states",
    metadata,
    sa.Column("loop_id", sa.String(200), primary_key=True),
    sa.Column("trigger_id", sa.String(200), primary_key=True),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("value", sa.Float),
    sa.Column("since", sa.Float, nullable=False),
    sa.Column("armed", sa.Boolean, nullable=False),
    sa.Column("cleared_at", sa.Float),
    sa.Column("evaluated_at", sa.Float, nullable=False),
)


def _job_columns() -> list[sa.Column[Any]]:
    """The columns of a job's row, in the queue as in its history."""
    return [
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("loop_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", MaskedText),
        sa.Column("not_before", sa.Float, nullable=False),
        sa.Column("owner", sa.String(200)),
        sa.Column("lease_until", sa.Float),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("execution_id", sa.String(32)),
        sa.Column("outcome", sa.String(32)),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
    ]


# The queue: one row per trigger firing, claimed by a daemon's worker under a lease; its envelope
# (its trigger and idempotency key too) is the ``envelopes`` row of its id.
jobs = sa.Table(
    "jobs",
    metadata,
    *_job_columns(),
    sa.Index("ix_jobs_status_created", "status", "created_at"),
    # A loop's jobs of a status in their order, for a claim naming loops (migration 19).
    sa.Index("ix_jobs_loop_status_created", "loop_id", "status", "created_at"),
)

# Jobs that ended (done or skipped), moved out of ``jobs`` by the daemons' sweep a few seconds
# after they end (``store.history``): the queue holds what is queued, running or just ended, and
# its claims do not slow down as history grows (migration 17).
job_history = sa.Table(
    "job_history",
    metadata,
    *_job_columns(),
    sa.Index("ix_job_history_loop_created", "loop_id", "created_at"),
)

# Cron slots: unique per (loop, trigger, instant), so no restart or second daemon runs one twice.
ticks = sa.Table(
    "ticks",
    metadata,
    sa.Column("loop_id", sa.String(200), primary_key=True),
    sa.Column("trigger_id", sa.String(200), primary_key=True),
    sa.Column("scheduled_for", sa.Float, primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", MaskedText),
    sa.Column("job_id", sa.String(32)),
    sa.Column("recorded_at", sa.Float, nullable=False),
)

daemons = sa.Table(
    "daemons",
    metadata,
    sa.Column("id", sa.String(200), primary_key=True),
    sa.Column("host", sa.String(200), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
    sa.Column("stopped_at", sa.Float),
    sa.Column("loops", sa.JSON, nullable=False),
)

paused_loops = sa.Table(
    "paused_loops",
    metadata,
    sa.Column("loop_id", sa.String(200), primary_key=True),
    sa.Column("paused_at", sa.Float, nullable=False),
)

# Bodies of verified deliveries whose signature covers the body alone (GitHub's), each held by
# the first delivery sending it until its hook's tolerance ends: another delivery sending it
# meanwhile is a replay of that one, whose job is ``job_id`` (migrations 10, 12). Redis stream
# entries appended to the event log are held here too (keys ``redis:…``) until acknowledged.
webhook_bodies = sa.Table(
    "webhook_bodies",
    metadata,
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("job_id", sa.String(32), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Index("ix_webhook_bodies_expires", "expires_at"),
)

# Positions in append-only logs (the event log), shared by the daemons of one store.
cursors = sa.Table(
    "cursors",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

node_health = sa.Table(
    "node_health",
    metadata,
    sa.Column("node", sa.String(200), primary_key=True),
    sa.Column("failures", sa.Integer, nullable=False),
    sa.Column("cooled_until", sa.Float, nullable=False),
    sa.Column("last_error", MaskedText),
    sa.Column("updated_at", sa.Float, nullable=False),
)

chat_sessions = sa.Table(
    "chat_sessions",
    metadata,
    sa.Column("id", sa.String(200), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
)

chat_messages = sa.Table(
    "chat_messages",
    metadata,
    sa.Column("session_id", sa.String(200), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("content", MaskedText),
    sa.Column("name", sa.String(200)),
    sa.Column("tool_call_id", sa.String(200)),
    sa.Column("tool_calls", sa.JSON),
    sa.Column("operation_id", sa.String(200), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    # What a tool message says of its run (seed 002), as sent: the time (ISO 8601), the relance
    # it belongs to, whether it succeeded, its error and how long it took.
    sa.Column("sent_at", sa.String(64)),
    sa.Column("relance_index", sa.Integer),
    sa.Column("success", sa.Boolean),
    sa.Column("error", MaskedText),
    sa.Column("duration_ms", sa.Float),
    # One result per tool call in a session; rows without a call id never collide (NULLs are
    # distinct in a unique index on SQLite and PostgreSQL alike, so no dialect-specific WHERE,
    # which would load the PostgreSQL dialect, ~35 ms, into every command).
    sa.Index("ux_chat_messages_tool_call", "session_id", "tool_call_id", unique=True),
)

chat_operations = sa.Table(
    "chat_operations",
    metadata,
    sa.Column("session_id", sa.String(200), primary_key=True),
    sa.Column("operation_id", sa.String(200), primary_key=True),
    sa.Column("body_hash", sa.String(64), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("applied_at", sa.Float, nullable=False),
)

reviews = sa.Table(
    "reviews",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("reason", MaskedText, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

chat_scores = sa.Table(
    "chat_scores",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("session_id", sa.String(200)),
    sa.Column("node", sa.String(200), nullable=False),
    sa.Column("category", sa.String(100), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),
    sa.Column("seconds", sa.Float, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("message", MaskedText, nullable=False),
    sa.Column("reply", MaskedText, nullable=False),
    sa.Column("quality", sa.Float),
    sa.Column("graded_at", sa.Float),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("prompt_version", sa.Integer, nullable=False, server_default="0"),
    sa.Column("claimed_until", sa.Float),
    sa.Index("ix_chat_scores_category_node", "category", "node", "id"),
    sa.Index("ix_chat_scores_graded", "graded_at", "id"),
    sa.Index("ix_chat_scores_claimed", "claimed_until"),
)

routing_orders = sa.Table(
    "routing_orders",
    metadata,
    sa.Column("category", sa.String(100), primary_key=True),
    sa.Column("nodes", sa.JSON, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("reason", MaskedText, nullable=False),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("updated_at", sa.Float, nullable=False),
)

autolearn_history = sa.Table(
    "autolearn_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("category", sa.String(100)),
    sa.Column("detail", sa.JSON, nullable=False),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("created_at", sa.Float, nullable=False),
)

memory_exchanges = sa.Table(
    "memory_exchanges",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(200), nullable=False),
    sa.Column("session_id", sa.String(200)),
    sa.Column("category", sa.String(100), nullable=False),
    sa.Column("message", MaskedText, nullable=False),
    sa.Column("reply", MaskedText, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_memory_exchanges_user", "user_id", "id"),
)

memory_profiles = sa.Table(
    "memory_profiles",
    metadata,
    sa.Column("user_id", sa.String(200), primary_key=True),
    sa.Column("exchanges", sa.Integer, nullable=False),
    sa.Column("profile", sa.JSON),
    sa.Column("profiled_at", sa.Integer, nullable=False, server_default="0"),
    sa.Column("summary", MaskedText),
    sa.Column("summary_node", sa.String(200)),
    sa.Column("summarized_at", sa.Integer, nullable=False, server_default="0"),
    sa.Column("updated_at", sa.Float, nullable=False),
)

chat_prompts = sa.Table(
    "chat_prompts",
    metadata,
    sa.Column("category", sa.String(100), primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("text", MaskedText, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("parent", sa.Integer, nullable=False),
    sa.Column("baseline", sa.Float),
    sa.Column("watched", sa.Integer, nullable=False, server_default="0"),
    sa.Column("judged_id", sa.Integer, nullable=False, server_default="0"),
    sa.Column("reason", MaskedText, nullable=False),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("created_at", sa.Float, nullable=False),
)

score_history = sa.Table(
    "score_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("category", sa.String(100), nullable=False),
    sa.Column("node", sa.String(200), nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("speed", sa.Float, nullable=False),
    sa.Column("quality", sa.Float, nullable=False),
    sa.Column("reliability", sa.Float, nullable=False),
    sa.Column("samples", sa.Integer, nullable=False),
    sa.Column("execution_id", sa.String(32)),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_score_history_category_node", "category", "node", "id"),
)

# Knowledge bases (``knowledge:`` in the config), by name; ``indexed_at`` is when an index run
# last finished, ``embedding_model`` the node and model (``node/model``) its vectors were made
# with (migration 15).
knowledge_collections = sa.Table(
    "knowledge_collections",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(100), nullable=False, unique=True),
    sa.Column("indexed_at", sa.Float),
    sa.Column("embedding_model", sa.String(400)),
)

# A collection's files, by path relative to the config's folder; ``digest`` hashes the file's
# bytes with how it was cut, so an unchanged file is not read into chunks again.
knowledge_files = sa.Table(
    "knowledge_files",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("collection_id", sa.Integer, nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("chunks", sa.Integer, nullable=False),
    sa.Column("indexed_at", sa.Float, nullable=False),
    sa.UniqueConstraint("collection_id", "path", name="uq_knowledge_files_path"),
)

# A file's chunks in order (``position``), each under its heading path. SQLite indexes them
# in the FTS5 table ``knowledge_fts`` (external content, kept by triggers), PostgreSQL in the
# generated ``tsvector`` column ``search`` (GIN); both made by migration 15.
knowledge_chunks = sa.Table(
    "knowledge_chunks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("collection_id", sa.Integer, nullable=False),
    sa.Column("file_id", sa.Integer, nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("heading", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Index("ix_knowledge_chunks_file", "file_id", "position"),
)

# A chunk's embedding (little-endian float32, unit length), for dense retrieval: a collection's
# vectors are read a page at a time in chunk order.
knowledge_vectors = sa.Table(
    "knowledge_vectors",
    metadata,
    sa.Column("chunk_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("collection_id", sa.Integer, nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),
    sa.Index("ix_knowledge_vectors_collection", "collection_id", "chunk_id"),
)
