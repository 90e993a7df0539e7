"""The loop model: identity, triggers, inputs, limits and the seven phases."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from loopengine.contract._base import Identifier, Name, Strict
from loopengine.contract._enums import Durability, Outcome, OverlapPolicy
from loopengine.contract._fields import TemplateField, no_params
from loopengine.contract._phases import Act, Analyze, Decide, Detect, Learn, Store, Validate
from loopengine.contract._triggers import Trigger

__all__ = ["Budget", "Concurrency", "Emit", "LoopSpec"]


class Budget(Strict):
    """Limits checked before every skill call; exceeding one ends as `budget_exceeded`."""

    tokens: int | None = Field(None, ge=0, description="LLM tokens (prompt + completion).")
    llm_calls: int | None = Field(None, ge=0, description="LLM requests.")
    wall_ms: int | None = Field(None, gt=0, description="Wall time of one execution.")


class Concurrency(Strict):
    """What happens when a trigger fires while an execution runs."""

    max: int = Field(1, ge=1, description="Executions of this loop at once.")
    on_overlap: OverlapPolicy = Field(OverlapPolicy.SKIP, description="Policy past `max`.")
    max_queue: int = Field(10, ge=0, description="Queued jobs kept with `on_overlap: queue`.")


class Emit(Strict):
    """An event emitted when the execution ends with one of the outcomes."""

    on: list[Outcome] = Field(min_length=1, description="Outcomes that emit the event.")
    event: Name = Field(description="Event name.", examples=["seo.audit.done"])
    data: TemplateField = Field(
        default_factory=no_params, description="Event data (`${ }` allowed)."
    )


class LoopSpec(Strict):
    """A loop: when it runs and what each of its seven phases does."""

    id: Identifier = Field(description="Unique in a loops folder, e.g. `seo_audit_loop`.")
    name: str | None = Field(None, description="Display name.")
    domain: str | None = Field(
        None, description="Grouping label.", examples=["CORE", "INFRA", "DATA", "SEO", "RAG"]
    )
    description: str | None = Field(None, description="What the loop is for, in a sentence.")
    trigger: Trigger | None = Field(None, description="When the loop runs (or use `triggers:`).")
    triggers: list[Trigger] | None = Field(None, description="Several triggers, each with an id.")
    durability: Durability = Field(
        Durability.PHASE,
        description="`phase` commits each phase result as it ends; `execution` once at the end.",
    )
    params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Named inputs: JSON Schema fragments, e.g. `{type: integer, default: 10}`.",
    )
    budget: Budget | None = Field(None, description="Token, LLM-call and wall-time limits.")
    concurrency: Concurrency = Field(
        Concurrency.model_construct(),
        description="Overlap policy when a trigger fires during an execution.",
    )
    detect: Detect | None = Field(None, description="Phase 1: observe and detect.")
    analyze: Analyze | None = Field(None, description="Phase 2: analyze the context.")
    decide: Decide | None = Field(None, description="Phase 3: choose an action.")
    act: Act | None = Field(None, description="Phase 4: run the action's skills.")
    validate_: Validate | None = Field(
        None, alias="validate", description="Phase 5: check the result, roll back if worse."
    )
    learn: Learn | None = Field(None, description="Phase 6: score and adjust learned state.")
    store: Store | None = Field(None, description="Phase 7: write artifacts and the audit record.")
    emit: list[Emit] = Field(default_factory=list, description="Events emitted on outcomes.")
