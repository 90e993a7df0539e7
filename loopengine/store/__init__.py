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
    ExecutionRow,
    JobEnvelope,
    PhaseResult,
    Usage,
    iso,
    new_envelope,
    new_id,
)
from loopengine.store._redis import async_redis_client, redis_failure, shown_url
from loopengine.store._writing import write_once

if TYPE_CHECKING:
    from loopengine.store._store import Pending, Store, impatient
    from loopengine.store.approvals import Approval
    from loopengine.store.effects import (
        AppendEvent,
        AppendLogs,
        AuditEntry,
        Effect,
        ExecutionCommit,
        IndexArtifacts,
        JobEnd,
        Metric,
        PutState,
        QueueReview,
        RecordMetrics,
        RequestApproval,
    )
    from loopengine.store.executions import ExecutionRecord, LastRun, Start, StartingPoint
    from loopengine.store.health import NodeHealthRow
    from loopengine.store.learning import LearnedState
    from loopengine.store.memory import UserMemory
    from loopengine.store.prompts import PromptVersion
    from loopengine.store.records import Artifact, AuditRecord
    from loopengine.store.signals import Event, Sample, Series
    from loopengine.store.threads import Batch, BatchState, Message, Thread

_EXPORTS = {
    "Approval": "loopengine.store.approvals",
    "AppendEvent": "loopengine.store.effects",
    "AppendLogs": "loopengine.store.effects",
    "AuditEntry": "loopengine.store.effects",
    "Effect": "loopengine.store.effects",
    "ExecutionCommit": "loopengine.store.effects",
    "IndexArtifacts": "loopengine.store.effects",
    "JobEnd": "loopengine.store.effects",
    "PutState": "loopengine.store.effects",
    "QueueReview": "loopengine.store.effects",
    "Metric": "loopengine.store.effects",
    "RecordMetrics": "loopengine.store.effects",
    "RequestApproval": "loopengine.store.effects",
    "ExecutionRecord": "loopengine.store.executions",
    "LastRun": "loopengine.store.executions",
    "Start": "loopengine.store.executions",
    "StartingPoint": "loopengine.store.executions",
    "LearnedState": "loopengine.store.learning",
    "Artifact": "loopengine.store.records",
    "AuditRecord": "loopengine.store.records",
    "Event": "loopengine.store.signals",
    "Sample": "loopengine.store.signals",
    "Series": "loopengine.store.signals",
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
    "AppendEvent",
    "AppendLogs",
    "Approval",
    "Artifact",
    "ArtifactWriter",
    "AuditEntry",
    "AuditRecord",
    "Batch",
    "BatchState",
    "Effect",
    "Encoded",
    "Event",
    "ExecutionCommit",
    "ExecutionRecord",
    "ExecutionRow",
    "IndexArtifacts",
    "JobEnd",
    "JobEnvelope",
    "LastRun",
    "LearnedState",
    "Message",
    "Metric",
    "NodeHealthRow",
    "Pending",
    "PhaseResult",
    "PromptVersion",
    "PutState",
    "QueueReview",
    "Reader",
    "RecordMetrics",
    "RequestApproval",
    "Sample",
    "Series",
    "Start",
    "StartingPoint",
    "Store",
    "Thread",
    "Usage",
    "UserMemory",
    "approvals",
    "async_redis_client",
    "autolearn",
    "create_engine",
    "effects",
    "executions",
    "flags",
    "health",
    "history",
    "impatient",
    "intake",
    "iso",
    "jobs",
    "knowledge",
    "learning",
    "logs",
    "memory",
    "migrate",
    "new_envelope",
    "new_id",
    "open_read_only",
    "prompts",
    "read_only_query",
    "records",
    "redis_failure",
    "select_from",
    "shown_url",
    "signals",
    "status",
    "threads",
    "webhooks",
    "write_once",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
