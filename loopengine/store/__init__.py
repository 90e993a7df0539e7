"""Persistence: SQLAlchemy Core tables, migrations, one flusher per store, and the repositories
(``executions``, ``signals``…: functions of a connection, run through ``Store.read``/``write``,
``Reader.read`` for the commands that only read, or ``write_once`` for those that add one row).

``Store`` loads with the async machinery on first use: the commands that only read never do.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports
from loopengine.store._artifacts import ArtifactWriter
from loopengine.store._database import create_engine
from loopengine.store._fastpath import Encoded
from loopengine.store._migrations import MIGRATIONS, migrate
from loopengine.store._reading import Reader, open_read_only
from loopengine.store._readonly import read_only_query, select_from
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
from loopengine.store._writing import write_once

if TYPE_CHECKING:
    from loopengine.store._store import Pending, Store, impatient

_EXPORTS = {
    "Pending": "loopengine.store._store",
    "Store": "loopengine.store._store",
    "impatient": "loopengine.store._store",
}

__all__ = [
    "MIGRATIONS",
    "ArtifactWriter",
    "Encoded",
    "ExecutionRecord",
    "ExecutionRow",
    "JobEnvelope",
    "Pending",
    "PhaseResult",
    "Reader",
    "Store",
    "Usage",
    "approvals",
    "autolearn",
    "create_engine",
    "executions",
    "flags",
    "health",
    "impatient",
    "intake",
    "iso",
    "jobs",
    "learning",
    "memory",
    "migrate",
    "new_envelope",
    "new_id",
    "open_read_only",
    "prompts",
    "read_only_query",
    "records",
    "select_from",
    "signals",
    "status",
    "threads",
    "webhooks",
    "write_once",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
