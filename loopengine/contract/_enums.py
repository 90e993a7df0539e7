"""Closed sets of the loop contract."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "BUILTIN_SKILLS",
    "Aggregation",
    "AnalysisStrategy",
    "ArtifactType",
    "AuditField",
    "BuiltinAction",
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
    "WebhookStyle",
]


class Phase(StrEnum):
    """The seven phases, in execution order."""

    DETECT = "detect"
    ANALYZE = "analyze"
    DECIDE = "decide"
    ACT = "act"
    VALIDATE = "validate"
    LEARN = "learn"
    STORE = "store"


class Outcome(StrEnum):
    """How an execution ended (or that it waits)."""

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
    DRY_RUN = "dry_run"
    """A dry run that went as far as the real run would have (never ``completed``)."""

    @property
    def succeeded(self) -> bool:
        """Whether the loop did what it should (``run`` exits 0): it completed, found nothing
        to do, or its dry run ended without a failure."""
        return self in _SUCCEEDED


_SUCCEEDED = frozenset(
    {
        Outcome.COMPLETED,
        Outcome.SKIPPED,
        Outcome.NOTHING_DETECTED,
        Outcome.NO_ACTION,
        Outcome.DRY_RUN,
    }
)


class TriggerType(StrEnum):
    """What starts a loop."""

    CRON = "cron"
    EVENT = "event"
    THRESHOLD = "threshold"
    WEBHOOK = "webhook"
    MANUAL = "manual"


class Durability(StrEnum):
    """When phase results are committed: as each phase ends, or once at the end."""

    PHASE = "phase"
    EXECUTION = "execution"


class OverlapPolicy(StrEnum):
    """What a trigger does while the loop already runs at its `max`."""

    SKIP = "skip"
    QUEUE = "queue"
    QUEUE_ONE = "queue_one"
    REPLACE = "replace"
    PARALLEL = "parallel"


class Catchup(StrEnum):
    """What a cron trigger does with fires missed during downtime."""

    SKIP = "skip"
    LATEST = "latest"
    ALL = "all"


class Operator(StrEnum):
    """Comparison operators."""

    GT = ">"
    LT = "<"
    GE = ">="
    LE = "<="
    EQ = "=="
    NE = "!="


class MissingMetric(StrEnum):
    """What a threshold does when its metric has no data."""

    HOLD = "hold"
    RESET = "reset"


class WebhookMethod(StrEnum):
    """HTTP methods a webhook accepts."""

    POST = "POST"
    PUT = "PUT"


class WebhookStyle(StrEnum):
    """How a webhook's deliveries are signed: Standard Webhooks, or GitHub's headers."""

    STANDARD = "standard"
    GITHUB = "github"


class BuiltinAction(StrEnum):
    """Decided actions that need no ``act.actions`` entry (built-in skills of the same name)."""

    NONE = "none"
    LOG_ONLY = "log_only"
    NOTIFY = "notify"
    LOG_AND_NOTIFY = "log_and_notify"
    ESCALATE_TO_HUMAN = "escalate_to_human"


BUILTIN_SKILLS = (
    "shell",
    "http.request",
    "webhook.send",
    "file.write",
    "file.move",
    "file.delete",
    "file.undo",
    "event.emit",
    "metrics.record",
    "llm.complete",
    "llm.classify",
    "llm.agent",
    "llm.reflexive",
    "rag.retrieve",
    "rag.answer",
    "knowledge.index",
    *(action.value for action in BuiltinAction),
    "source.metric",
    "source.log",
    "source.event",
    "source.alert",
    "source.database",
    "autolearn.scores",
    "autolearn.route",
    "autolearn.record_scores",
    "autolearn.grade",
    "autolearn.replay",
    "autolearn.propose",
    "autolearn.vote",
    "autolearn.apply_prompt",
    "autolearn.watch",
    "autolearn.check",
    "autolearn.rollback_prompt",
    "autolearn.analyze_trends",
    "autolearn.profile",
    "autolearn.summarize",
)
"""The built-in skills' names, offered by the loop schema where a skill is named (an editor
completes them; a plugin's skill is as valid). A test keeps it equal to the registry's."""


class SourceType(StrEnum):
    """Built-in detect sources; each is read by the built-in skill ``source.<type>``."""

    METRIC = "metric"
    LOG = "log"
    EVENT = "event"
    ALERT = "alert"
    DATABASE = "database"

    @property
    def skill(self) -> str:
        """The built-in skill that reads sources of this type."""
        return f"source.{self.value}"


class Aggregation(StrEnum):
    """Aggregations applied to a source's list."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    COUNT = "count"


class AnalysisStrategy(StrEnum):
    """How analysis is done; `llm` steps get the loop's cluster."""

    RULE_BASED = "rule_based"
    ML = "ml"
    HYBRID = "hybrid"
    LLM = "llm"


class Priority(StrEnum):
    """Priority of a decision."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class ExecMode(StrEnum):
    """How act runs its items: one by one, all at once, or in batches."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    BATCH = "batch"


class Severity(StrEnum):
    """What a failed assertion does: `error` fails the execution, others are recorded."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class FeedbackType(StrEnum):
    """Kinds of feedback that score an execution."""

    OUTCOME = "outcome"
    METRIC = "metric"
    HUMAN = "human"
    AB_TEST = "a_b_test"


class ArtifactType(StrEnum):
    """Kinds of artifact the store phase writes."""

    LOG = "log"
    METRIC = "metric"
    DECISION = "decision"
    OUTCOME = "outcome"
    AUDIT = "audit"


class AuditField(StrEnum):
    """Fields an audit record may hold."""

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
