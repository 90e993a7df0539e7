"""Closed sets of the loop contract."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "Aggregation",
    "AnalysisStrategy",
    "ArtifactType",
    "AuditField",
    "Catchup",
    "Durability",
    "ExecMode",
    "FeedbackType",
    "MissingMetric",
    "Operator",
    "Outcome",
    "OverlapPolicy",
    "Phase",
    "Priority",
    "Severity",
    "SourceType",
    "TriggerType",
    "WebhookMethod",
]


class Phase(StrEnum):
    DETECT = "detect"
    ANALYZE = "analyze"
    DECIDE = "decide"
    ACT = "act"
    VALIDATE = "validate"
    LEARN = "learn"
    STORE = "store"


class Outcome(StrEnum):
    COMPLETED = "completed"
    SKIPPED = "skipped"
    NOTHING_DETECTED = "nothing_detected"
    NO_ACTION = "no_action"
    AWAITING_APPROVAL = "awaiting_approval"
    REJECTED = "rejected"
    ESCALATED = "escalated"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"
    BUDGET_EXCEEDED = "budget_exceeded"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"


class TriggerType(StrEnum):
    CRON = "cron"
    EVENT = "event"
    THRESHOLD = "threshold"
    WEBHOOK = "webhook"
    MANUAL = "manual"


class Durability(StrEnum):
    PHASE = "phase"
    EXECUTION = "execution"


class OverlapPolicy(StrEnum):
    SKIP = "skip"
    QUEUE = "queue"
    QUEUE_ONE = "queue_one"
    REPLACE = "replace"
    PARALLEL = "parallel"


class Catchup(StrEnum):
    SKIP = "skip"
    LATEST = "latest"
    ALL = "all"


class Operator(StrEnum):
    GT = ">"
    LT = "<"
    GE = ">="
    LE = "<="
    EQ = "=="
    NE = "!="


class MissingMetric(StrEnum):
    HOLD = "hold"
    RESET = "reset"


class WebhookMethod(StrEnum):
    POST = "POST"
    PUT = "PUT"


class SourceType(StrEnum):
    METRIC = "metric"
    LOG = "log"
    EVENT = "event"
    ALERT = "alert"
    DATABASE = "database"


class Aggregation(StrEnum):
    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    COUNT = "count"


class AnalysisStrategy(StrEnum):
    RULE_BASED = "rule_based"
    ML = "ml"
    HYBRID = "hybrid"
    LLM = "llm"


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class ExecMode(StrEnum):
    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    BATCH = "batch"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class FeedbackType(StrEnum):
    OUTCOME = "outcome"
    METRIC = "metric"
    HUMAN = "human"
    AB_TEST = "a_b_test"


class ArtifactType(StrEnum):
    LOG = "log"
    METRIC = "metric"
    DECISION = "decision"
    OUTCOME = "outcome"
    AUDIT = "audit"


class AuditField(StrEnum):
    TIMESTAMP = "timestamp"
    LOOP_ID = "loop_id"
    LOOP_VERSION = "loop_version"
    EXECUTION_ID = "execution_id"
    JOB_ID = "job_id"
    TRACE_ID = "trace_id"
    TRIGGER_TYPE = "trigger_type"
    DECISION_MADE = "decision_made"
    ACTIONS_TAKEN = "actions_taken"
    OUTCOME = "outcome"
    CONFIDENCE = "confidence"
    DURATION_MS = "duration_ms"
