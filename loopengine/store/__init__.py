"""Persistence: SQLAlchemy Core tables, migrations, one writer thread, and the repositories
(``executions``, ``signals``…: functions of a connection, run through ``Store.read``/``write``)."""

from loopengine.store._artifacts import ArtifactWriter
from loopengine.store._database import DATABASE_ENV, create_engine
from loopengine.store._migrations import MIGRATIONS, migrate
from loopengine.store._readonly import read_only_query
from loopengine.store._store import Store

__all__ = [
    "DATABASE_ENV",
    "MIGRATIONS",
    "ArtifactWriter",
    "Store",
    "approvals",
    "create_engine",
    "executions",
    "flags",
    "health",
    "jobs",
    "learning",
    "migrate",
    "read_only_query",
    "records",
    "signals",
]
