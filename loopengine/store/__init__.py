"""Persistence: SQLAlchemy Core tables, migrations, one flusher per store, and the repositories
(``executions``, ``signals``…: functions of a connection, run through ``Store.read``/``write``)."""

from loopengine.store._artifacts import ArtifactWriter
from loopengine.store._database import create_engine
from loopengine.store._fastpath import Encoded
from loopengine.store._migrations import MIGRATIONS, migrate
from loopengine.store._readonly import read_only_query
from loopengine.store._record import (
    ExecutionRecord,
    ExecutionRow,
    JobEnvelope,
    PhaseResult,
    Usage,
    iso,
    new_envelope,
    new_id,
)
from loopengine.store._store import Pending, Store

__all__ = [
    "MIGRATIONS",
    "ArtifactWriter",
    "Encoded",
    "ExecutionRecord",
    "ExecutionRow",
    "JobEnvelope",
    "Pending",
    "PhaseResult",
    "Store",
    "Usage",
    "approvals",
    "create_engine",
    "executions",
    "flags",
    "health",
    "iso",
    "jobs",
    "learning",
    "migrate",
    "new_envelope",
    "new_id",
    "read_only_query",
    "records",
    "signals",
    "threads",
]
