"""Persistence: SQLAlchemy Core tables, migrations, one writer thread, repositories."""

from loopengine.store._artifacts import ArtifactWriter
from loopengine.store._database import DATABASE_ENV, create_engine
from loopengine.store._migrations import MIGRATIONS, migrate
from loopengine.store._readonly import read_only_query
from loopengine.store._store import Store
from loopengine.store._tables import (
    artifacts,
    audit,
    chat_messages,
    chat_operations,
    chat_sessions,
    node_health,
    phase_results,
    trigger_states,
)

__all__ = [
    "DATABASE_ENV",
    "MIGRATIONS",
    "ArtifactWriter",
    "Store",
    "artifacts",
    "audit",
    "chat_messages",
    "chat_operations",
    "chat_sessions",
    "create_engine",
    "migrate",
    "node_health",
    "phase_results",
    "read_only_query",
    "trigger_states",
]
