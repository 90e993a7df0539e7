"""Databases as an older loopengine left them, for the migration tests."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store import MIGRATIONS
from loopengine.store import _tables as tables


def migrated_to(connection: sa.Connection, version: int) -> None:
    """Apply the migrations up to ``version`` and record them, as that version did."""
    tables.schema_version.create(connection)
    for migration in MIGRATIONS[:version]:
        migration.apply(connection)
        row = {"version": migration.version, "applied_at": 0.0, "description": "old"}
        connection.execute(tables.schema_version.insert().values(**row))


_V11 = sa.MetaData()


def _columns(table: sa.Table, *, required: str = "", without: str = "") -> list[sa.Column[Any]]:
    """Today's columns of ``table``, ``required`` ones not nullable, ``without`` left out."""
    return [
        sa.Column(
            column.name,
            column.type,
            primary_key=column.primary_key,
            unique=column.unique,
            nullable=column.nullable and column.name != required,
        )
        for column in table.c
        if column.name != without
    ]


def _trigger() -> sa.Column[Any]:
    return sa.Column("trigger", sa.JSON, nullable=False, server_default="{}")


_KEY = sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True)
_V11_TABLES = (
    sa.Table(
        "envelopes", _V11, *_columns(tables.envelopes, required="execution_id", without="trigger")
    ),
    sa.Table(
        "executions",
        _V11,
        *_columns(tables.executions),
        _trigger(),
        *(sa.Index(i.name, *(c.name for c in i.columns)) for i in tables.executions.indexes),
    ),
    sa.Table(
        "jobs",
        _V11,
        *_columns(tables.jobs),
        _trigger(),
        sa.Column("envelope", sa.JSON, nullable=False),
        _KEY,
        sa.Index("ix_jobs_status_created", "status", "created_at"),
        sa.Index("ix_jobs_loop_status", "loop_id", "status"),
    ),
    sa.Table(
        "webhook_bodies",
        _V11,
        *_columns(tables.webhook_bodies, without="job_id"),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Index("ix_webhook_bodies_expires", "expires_at"),
    ),
)
V11_ENVELOPES, V11_EXECUTIONS, V11_JOBS, V11_BODIES = _V11_TABLES
V11_PHASES = sa.Table(
    "phase_results",
    _V11,
    sa.Column("execution_id", sa.String(32), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("completed_at", sa.Float, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("outcome", sa.String(32)),
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("errors", sa.JSON, nullable=False),
)


def at_version_11(connection: sa.Connection) -> None:
    """The schema as version 11 left it: a job held its envelope, trigger and key, an
    execution its trigger, an envelope's row was written by its execution alone, a held body
    named its delivery's key, and each phase had its row."""
    migrated_to(connection, 11)
    for table in _V11_TABLES:
        for index in table.indexes:
            connection.execute(sa.text(f"DROP INDEX IF EXISTS {index.name}"))
        connection.execute(sa.text(f"DROP TABLE {table.name}"))
        table.create(connection)
    connection.execute(sa.text(f"DROP TABLE {tables.phases.name}"))
    V11_PHASES.create(connection)
