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
    from loopengine.store.health import NodeHealthRow
    from loopengine.store.memory import UserMemory
    from loopengine.store.prompts import PromptVersion
    from loopengine.store.threads import Batch, BatchState, Message, Thread

_EXPORTS = {
    "Pending": "loopengine.store._store",
    "Store": "loopengine.store._store",
    "impatient": "loopengine.store._store",
    "Batch": "loopengine.store.threads",
    "BatchState": "loopengine.store.threads",
    "Message": "loopengine.store.threads",
    "NodeHealthRow": "loopengine.store.health",
    "PromptVersion": "loopengine.store.prompts",
    "Thread": "loopengine.store.threads",
    "UserMemory": "loopengine.store.memory",
}

__all__ = [
    "MIGRATIONS",
    "ArtifactWriter",
    "Batch",
    "BatchState",
    "Encoded",
    "ExecutionRecord",
    "ExecutionRow",
    "JobEnvelope",
    "Message",
    "NodeHealthRow",
    "Pending",
    "PhaseResult",
    "PromptVersion",
    "Reader",
    "Store",
    "Thread",
    "Usage",
    "UserMemory",
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
