"""Contract models: defaults, immutability, compiled fields, aliases, trigger kinds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from loopengine.contract import (
    CronTrigger,
    Durability,
    ExecMode,
    LoopSpec,
    Outcome,
    OverlapPolicy,
    Phase,
    Source,
    SourceType,
    ThresholdTrigger,
    WebhookTrigger,
)
from loopengine.expr import Expression, Template


def _spec(**extra: Any) -> LoopSpec:
    return LoopSpec.model_validate({"id": "x", "trigger": {"type": "manual"}, **extra})


def test_defaults_of_a_minimal_loop() -> None:
    spec = _spec()
    assert spec.durability is Durability.PHASE
    assert spec.concurrency.on_overlap is OverlapPolicy.SKIP
    assert spec.concurrency.max == 1
    assert spec.detect is None


def test_models_are_frozen() -> None:
    spec = _spec()
    with pytest.raises(ValidationError):
        spec.id = "y"  # type: ignore[misc]


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ValidationError):
        _spec(detcet={})


def test_validate_phase_is_read_under_its_yaml_name() -> None:
    spec = _spec(validate={"assertions": [{"expression": "a <= b"}]})
    assert spec.validate_ is not None
    assert isinstance(spec.validate_.assertions[0].expression, Expression)


def test_params_are_compiled_templates() -> None:
    spec = _spec(
        act={"actions": [{"action_id": "a", "skill_id": "s", "params": {"n": "${ input.n }"}}]}
    )
    assert spec.act is not None
    params = spec.act.actions[0].params
    assert isinstance(params, Template)
    assert params.render({"input": {"n": 4}}) == {"n": 4}


def test_serialising_gives_back_what_the_author_wrote() -> None:
    spec = _spec(detect={"conditions": [{"expression": "pages.count > 0"}]})
    dumped = spec.model_dump(by_alias=True, exclude_defaults=True)
    assert dumped["detect"] == {"conditions": [{"expression": "pages.count > 0"}]}


def test_cron_defaults() -> None:
    trigger = CronTrigger.model_validate({"type": "cron", "config": {"expression": "0 2 * * *"}})
    assert (trigger.config.timezone, trigger.config.catchup.value) == ("UTC", "latest")


def test_threshold_durations_accept_units_and_numbers() -> None:
    trigger = ThresholdTrigger.model_validate(
        {
            "type": "threshold",
            "config": {"metric": "m", "operator": ">", "value": 1, "for": "5m", "every": 30},
        }
    )
    assert (trigger.config.for_, trigger.config.every) == (300, 30)


def test_webhook_defaults() -> None:
    trigger = WebhookTrigger.model_validate({"type": "webhook", "config": {"path": "hooks/x"}})
    assert (trigger.config.method.value, trigger.config.tolerance_s) == ("POST", 300)


def test_several_triggers() -> None:
    spec = LoopSpec.model_validate(
        {
            "id": "x",
            "triggers": [
                {"id": "nightly", "type": "cron", "config": {"expression": "0 2 * * *"}},
                {"type": "event", "config": {"event_pattern": "seo.**"}},
            ],
        }
    )
    assert spec.triggers is not None
    assert [t.type for t in spec.triggers] == ["cron", "event"]


def test_act_defaults() -> None:
    spec = _spec(act={"actions": [{"action_id": "a", "skill_id": "s"}]})
    assert spec.act is not None
    assert (spec.act.execution_mode, spec.act.batch_size, spec.act.dry_run_first) == (
        ExecMode.SEQUENTIAL,
        10,
        False,
    )


def test_emit_names_outcomes() -> None:
    spec = _spec(emit=[{"on": ["completed", "failed"], "event": "x.done"}])
    assert spec.emit[0].on == [Outcome.COMPLETED, Outcome.FAILED]


def test_the_seven_phases_in_order() -> None:
    assert [p.value for p in Phase] == [
        "detect",
        "analyze",
        "decide",
        "act",
        "validate",
        "learn",
        "store",
    ]


def test_every_contract_outcome_exists() -> None:
    assert {o.value for o in Outcome} == {
        "completed",
        "skipped",
        "nothing_detected",
        "no_action",
        "awaiting_approval",
        "rejected",
        "escalated",
        "failed",
        "rolled_back",
        "budget_exceeded",
        "timed_out",
        "interrupted",
        "cancelled",
        "dry_run",
    }


def test_a_built_in_source_takes_its_name_and_filter_as_written() -> None:
    """A database source's filter is SQL: values of the run are never spliced into it."""
    source = Source(type=SourceType.DATABASE, name="pages_${ x }", filter="name = '${ input.who }'")
    rendered = source.reader_params.render({"input": {"who": "x' OR '1'='1"}, "x": 1}, {})
    assert rendered == {"name": "pages_${ x }", "filter": "name = '${ input.who }'"}
