"""Models of the seven phases: detect, analyze, decide, act, validate, learn, store."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import Field

from loopengine.contract._base import Name, Strict
from loopengine.contract._enums import (
    BUILTIN_SKILLS,
    Aggregation,
    AnalysisStrategy,
    ArtifactType,
    AuditField,
    ExecMode,
    FeedbackType,
    Operator,
    Priority,
    Severity,
    SourceType,
)
from loopengine.contract._fields import ExpressionField, TemplateField, no_params
from loopengine.expr import Template, compile_template

__all__ = [
    "Act",
    "Action",
    "AnalysisStep",
    "Analyze",
    "AntiHallucination",
    "Artifact",
    "Assertion",
    "AuditTrail",
    "AutoRollback",
    "Condition",
    "ContextRequirement",
    "Decide",
    "Detect",
    "Feedback",
    "HumanApproval",
    "Learn",
    "LearningConfig",
    "MetricRecord",
    "Rule",
    "SkipIf",
    "Source",
    "Store",
    "SuccessCriterion",
    "Validate",
]


class PhaseSettings(Strict):
    """Settings every phase accepts."""

    timeout_ms: int | None = Field(None, gt=0, description="Deadline of the whole phase.")
    max_retries: int = Field(
        0,
        ge=0,
        le=20,
        description="Retries of a failed retryable skill call (exponential backoff).",
    )


class Source(Strict):
    """Where detect reads data: a built-in source `type`, or any `skill`."""

    type: SourceType | None = Field(None, description="Built-in source; omit when `skill` is set.")
    skill: Name | None = Field(
        None,
        description="A skill to call instead of a built-in source.",
        examples=list(BUILTIN_SKILLS),
    )
    name: Name = Field(description="Series, event, log, alert or table name the source reads.")
    filter: str | None = Field(
        None, description="Source-specific filter (for `database`, the SQL WHERE clause)."
    )
    freshness_hours: float | None = Field(
        None, gt=0, description="Data older than this is stale (recorded; conditions can test it)."
    )
    as_: Name | None = Field(
        None, alias="as", description="Put the whole result under this name in the context."
    )
    params: TemplateField = Field(default_factory=no_params, description="Params of `skill`.")

    @cached_property
    def reader_params(self) -> Template:
        """Params of the built-in skill reading a ``type`` source (name, filter, window…)."""
        assert self.type is not None
        fields: dict[str, Any] = {"name": _literal(self.name), **(self.params.source or {})}
        if self.filter is not None:
            fields["filter"] = _literal(self.filter)
        if self.freshness_hours is not None and self.type in _WINDOWED:
            fields["freshness_hours"] = self.freshness_hours
        return compile_template(fields)


_WINDOWED = frozenset({SourceType.METRIC, SourceType.EVENT})


def _literal(text: str) -> str:
    """``text`` as the template of itself: a source's name and filter are taken as written (a
    filter is SQL for the database source: values from the run must never be spliced in)."""
    return text.replace("${", "$${")


class Condition(Strict):
    """A condition that must hold for the loop to go on past detect."""

    expression: ExpressionField = Field(
        description="Must hold (over the context) for the loop to go on.",
        examples=["violations.count > 0"],
    )
    threshold: float | None = Field(
        None, description="Value the aggregated source is compared with."
    )
    aggregation: Aggregation | None = Field(
        None, description="Aggregation applied to the source's list before comparing."
    )


class SkipIf(Strict):
    """When true, the execution ends as `skipped`."""

    expression: ExpressionField = Field(
        description="When true, the execution ends as `skipped`.", examples=["since_last_run < 6h"]
    )


class Detect(PhaseSettings):
    """Phase 1: observe the sources and decide whether there is anything to do."""

    sources: list[Source] = Field(default_factory=list, description="Read in parallel.")
    conditions: list[Condition] = Field(
        default_factory=list, description="All must hold, else the outcome is `nothing_detected`."
    )
    skip_if: list[SkipIf] = Field(
        default_factory=list, description="Any true ends the execution as `skipped`."
    )


class ContextRequirement(Strict):
    """Context the analysis needs, cached for `ttl_seconds`."""

    context_type: Name = Field(description="Name the context is put under.")
    source: Name = Field(description="Skill or stored state that provides it.")
    ttl_seconds: float = Field(0, ge=0, description="How long a loaded context is reused.")


class AnalysisStep(Strict):
    """One analysis step; its output is `analysis.<name>` and is merged into the context."""

    name: Name = Field(description="Step name; its output is `analysis.<name>`.")
    skill_id: Name = Field(description="Skill to call.", examples=list(BUILTIN_SKILLS))
    params: TemplateField = Field(default_factory=no_params, description="Params of the skill.")


class Analyze(PhaseSettings):
    """Phase 2: load context and run the analysis steps in order."""

    strategy: AnalysisStrategy = Field(
        AnalysisStrategy.RULE_BASED, description="`llm` steps get the loop's cluster."
    )
    context_required: list[ContextRequirement] = Field(
        default_factory=list, description="Context loaded before the steps."
    )
    analysis_steps: list[AnalysisStep] = Field(
        default_factory=list, description="Steps run in order."
    )


class Rule(Strict):
    """A decision: the first rule whose condition holds with enough confidence wins."""

    condition: ExpressionField = Field(description="When it holds (over the context).")
    confidence_required: float = Field(0, ge=0, le=1, description="Minimum analysis confidence.")
    action: Name = Field(description="Action to take: an action id, an `on:` tag or a built-in.")
    priority: Priority = Field(Priority.NORMAL, description="Recorded with the decision.")


class HumanApproval(Strict):
    """Actions that wait for a human before they run."""

    required_for: list[Name] = Field(default_factory=list, description="Decided actions gated.")
    timeout_hours: float = Field(24, gt=0, description="Escalate after this long without answer.")
    escalation_target: Name | None = Field(None, description="Event emitted on escalation.")


class Decide(PhaseSettings):
    """Phase 3: choose one action."""

    decision_tree: list[Rule] = Field(default_factory=list, description="Rules, tried in order.")
    fallback_action: Name | None = Field(None, description="Action when no rule applies.")
    human_approval: HumanApproval | None = Field(
        None, description="Decisions that wait for a human before act."
    )


class Action(Strict):
    """A skill run by act, bounded and reversible."""

    action_id: Name = Field(
        description="The action's name: a decision of this name runs it (with the actions whose "
        "`on:` lists it)."
    )
    skill_id: Name = Field(description="Skill to call.", examples=list(BUILTIN_SKILLS))
    params: TemplateField = Field(
        default_factory=no_params, description="Params of the skill (`${ }` allowed)."
    )
    rollback_skill: Name | None = Field(
        None, description="Skill that undoes this action.", examples=list(BUILTIN_SKILLS)
    )
    rollback_params: TemplateField = Field(
        default_factory=no_params, description="Params of `rollback_skill` (`${ }` allowed)."
    )
    on: list[Name] | None = Field(
        None, description="Decided actions that run this one; none means any other decision."
    )
    items: ExpressionField | None = Field(
        None, description="Expression giving the list of items to act on (needs max_affected)."
    )
    max_affected: int | None = Field(None, ge=1, description="Most items one execution affects.")
    feature_flag: Name | None = Field(None, description="Flag that must be on for it to run.")


class Act(PhaseSettings):
    """Phase 4: run the actions of the decision."""

    actions: list[Action] = Field(
        default_factory=list,
        description="Actions; a decided name runs those whose `action_id` is it or whose `on:` "
        "lists it, in file order.",
    )
    execution_mode: ExecMode = Field(
        ExecMode.SEQUENTIAL, description="How items run: one by one, all at once, or in batches."
    )
    batch_size: int = Field(10, ge=1, description="Items per batch with `execution_mode: batch`.")
    dry_run_first: bool = Field(False, description="Run each skill with `dry_run: true` first.")


class Assertion(Strict):
    """A check on the result of act."""

    expression: ExpressionField = Field(
        description="Must hold over the context after act.",
        examples=["violations.after <= violations.before"],
    )
    severity: Severity = Field(Severity.ERROR, description="`error` fails the execution.")
    retry_on_fail: bool = Field(False, description="Re-run act, then validate again.")
    max_retries: int = Field(0, ge=0, le=20, description="Re-runs of act with `retry_on_fail`.")
    message: str | None = Field(None, description="Shown when the assertion fails.")


class SuccessCriterion(Strict):
    """A metric comparison recorded as met or not."""

    metric: ExpressionField = Field(description="Value in the context, e.g. `violations.count`.")
    operator: Operator = Field(description="How the metric compares with `expected`.")
    expected: float = Field(description="Value the metric is compared with.")


class AutoRollback(Strict):
    """Undo completed actions when things got worse."""

    enabled: bool = Field(False, description="Roll back completed actions, newest first.")
    trigger_conditions: list[ExpressionField] = Field(
        default_factory=list, description="Any true (or a failed error assertion) rolls back."
    )
    max_rollback_time_ms: int = Field(60_000, gt=0, description="Deadline of the rollback.")


class Validate(PhaseSettings):
    """Phase 5: verify what act did."""

    assertions: list[Assertion] = Field(default_factory=list, description="Checks of act's result.")
    success_criteria: list[SuccessCriterion] = Field(
        default_factory=list, description="Metric comparisons recorded as met or not."
    )
    auto_rollback: AutoRollback | None = Field(
        None, description="When and how long completed actions are undone."
    )


class Feedback(Strict):
    """A signal that scores an execution."""

    type: FeedbackType = Field(
        description="`outcome` (validation passed: 1, else 0), a `metric`'s latest point, …"
    )
    name: Name = Field(description="The signal's name; for `metric`, the series read.")
    weight: float = Field(1, ge=0, le=1, description="Its weight in the execution's score.")


class LearningConfig(Strict):
    """How fast learned values move."""

    rate: float = Field(
        0.1, gt=0, le=1, description="Share of the way to its target a value moves each time."
    )
    max_adjustment: float | None = Field(None, ge=0, description="Cap of one adjustment.")
    min_samples: int = Field(1, ge=0, description="Executions needed before any adjustment.")
    cooldown_hours: float = Field(0, ge=0, description="Pause between two adjustments.")


class AntiHallucination(Strict):
    """Keep low-confidence executions from teaching."""

    enabled: bool = Field(False, description="Apply the floor and the review threshold.")
    confidence_floor: float = Field(0.7, ge=0, le=1, description="Below it, never learn.")
    human_review_threshold: float = Field(0.5, ge=0, le=1, description="Below it, queue a review.")


class Adjustment(Strict):
    """A learned value kept in `state`, moved toward `target` after each execution."""

    name: Name = Field(description="Key in `state`.")
    target: ExpressionField = Field(description="Where the value should go, over the context.")
    initial: float = Field(0, description="Value before the first adjustment.")
    min: float | None = Field(None, description="Lowest allowed value.")
    max: float | None = Field(None, description="Highest allowed value.")


class MetricRecord(Strict):
    """A metric point written when the execution learns (for loops that tune from them)."""

    metric: Name = Field(description="Series name, e.g. `llm.latency_ms`.")
    value: ExpressionField = Field(description="Number to record, over the context.")
    labels: TemplateField = Field(
        default_factory=no_params, description="Labels (`${ }` allowed), e.g. `{node: ...}`."
    )


class Learn(PhaseSettings):
    """Phase 6: score the execution and adjust learned state."""

    feedback_sources: list[Feedback] = Field(
        default_factory=list, description="Signals combined by weight into the execution's score."
    )
    record: list[MetricRecord] = Field(
        default_factory=list, description="Metric points recorded from this execution."
    )
    adjust: list[Adjustment] = Field(
        default_factory=list, description="Learned values; `state.score` is always learned."
    )
    learning_config: LearningConfig = Field(
        LearningConfig.model_construct(),
        description="Rate, cap, samples and cooldown of the adjustments.",
    )
    anti_hallucination: AntiHallucination = Field(
        AntiHallucination.model_construct(),
        description="Confidence floor and review threshold of learning.",
    )


class Artifact(Strict):
    """A record written by the store phase."""

    type: ArtifactType = Field(description="What the artifact holds.")
    name: Name = Field(description="Its name, unique in the loop.")
    storage: Name = Field("file", description="Storage name from the config's `storage:` map.")
    retention_days: int | None = Field(None, ge=0, description="The daemon prunes older ones.")
    indexed: bool = Field(False, description="Recorded with the artifact, for search.")


class AuditTrail(Strict):
    """The audit record appended for every execution."""

    enabled: bool = Field(True, description="Append the audit record.")
    fields: list[AuditField] = Field(
        default_factory=lambda: list(AuditField), description="What the record holds."
    )


class Store(PhaseSettings):
    """Phase 7: persist artifacts and the audit trail."""

    artifacts: list[Artifact] = Field(default_factory=list, description="Records written.")
    audit_trail: AuditTrail = Field(
        AuditTrail.model_construct(), description="Whether and what the audit records."
    )
    retention_days: float | None = Field(
        None,
        gt=0,
        description="The daemon prunes this loop's finished executions (phases, job, approval) "
        "and its done jobs and cron slots older than this; the audit trail is kept.",
    )
