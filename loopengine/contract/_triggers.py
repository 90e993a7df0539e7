"""Trigger models: when a loop runs (cron, event, threshold, webhook, manual)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from loopengine.contract._base import Identifier, Name, Strict
from loopengine.contract._enums import (
    Catchup,
    MissingMetric,
    Operator,
    WebhookMethod,
    WebhookStyle,
)
from loopengine.contract._fields import Duration, ExpressionField

__all__ = [
    "MAX_WEBHOOK_BODY",
    "CronConfig",
    "CronTrigger",
    "EventConfig",
    "EventTrigger",
    "ManualConfig",
    "ManualTrigger",
    "ThresholdConfig",
    "ThresholdTrigger",
    "Trigger",
    "WebhookConfig",
    "WebhookTrigger",
]

MAX_WEBHOOK_BODY = 1_048_576
"""Most bytes of a webhook's body: the daemon API's limit on any request body."""
_ID = Field(None, description="Names this trigger when a loop has several (`triggers:`).")
_TYPE = Field(description="What fires the loop: cron, event, threshold, webhook or manual.")
_CONFIG = Field(description="The trigger's settings.")


class CronConfig(Strict):
    """A schedule in cron syntax."""

    expression: str = Field(
        description="5 fields (minute hour day month weekday) or 6 with seconds first.",
        examples=["0 2 * * *", "*/15 * * * *"],
    )
    timezone: str = Field(
        "UTC", description="IANA time zone of the schedule; instants are stored in UTC."
    )
    catchup: Catchup = Field(
        Catchup.LATEST,
        description="After downtime: `skip` missed fires, run the `latest`, or `all` (bounded).",
    )
    catchup_window: Duration | None = Field(
        None, description="How far back missed fires count (default: one period)."
    )
    max_catchup: int = Field(10, ge=0, description="Most missed fires run with `catchup: all`.")
    jitter_s: float = Field(0, ge=0, description="Random delay up to this many seconds per fire.")


class CronTrigger(Strict):
    """Runs the loop on a cron schedule."""

    type: Literal["cron"] = _TYPE
    id: Identifier | None = _ID
    config: CronConfig = _CONFIG


class EventConfig(Strict):
    """Which events start the loop."""

    event_pattern: Name = Field(
        description="Dot-separated glob: `*` one segment, `**` any depth (anchored).",
        examples=["seo.page.updated", "seo.*", "cluster.**"],
    )
    filter: ExpressionField | None = Field(
        None, description="Expression over the event (`name`, `data`, `source`) that must hold."
    )
    scope: ExpressionField | None = Field(
        None, description="Expression mapping the event to the job scope (no I/O in a trigger)."
    )


class EventTrigger(Strict):
    """Runs the loop when a matching event is emitted."""

    type: Literal["event"] = _TYPE
    id: Identifier | None = _ID
    config: EventConfig = _CONFIG


class ThresholdConfig(Strict):
    """A metric condition with pending/firing states and hysteresis."""

    metric: Name = Field(description="Metric series name, e.g. `seo.violations.count`.")
    operator: Operator = Field(description="Comparison of the metric with `value`.")
    value: float = Field(description="The threshold.")
    for_: Duration = Field(
        0, alias="for", description="How long the condition must hold before firing."
    )
    every: Duration = Field(60, description="Evaluation interval.")
    keep_firing_for: Duration = Field(0, description="Stay firing this long after it clears.")
    clear_value: float | None = Field(
        None, description="Hysteresis: re-arms only once the metric is back past this value."
    )
    fire_on_start: bool = Field(False, description="Fire if the condition already holds at start.")
    on_missing: MissingMetric = Field(
        MissingMetric.HOLD, description="With no data: `hold` the state or `reset` to inactive."
    )


class ThresholdTrigger(Strict):
    """Runs the loop when a metric crosses a threshold (on entering *firing* only)."""

    type: Literal["threshold"] = _TYPE
    id: Identifier | None = _ID
    config: ThresholdConfig = _CONFIG


class WebhookConfig(Strict):
    """An HTTP endpoint of the daemon, optionally signed."""

    path: str = Field(
        pattern=r"^/?[A-Za-z0-9_\-./]+$",
        description="Served under `/hooks/`, e.g. `seo/updated`.",
    )
    method: WebhookMethod = Field(WebhookMethod.POST, description="HTTP method accepted.")
    secret: str | None = Field(
        None,
        description="HMAC-SHA256 key (`whsec_…` is base64); write `${ secret.NAME }`. "
        "Without one, deliveries are not signed.",
    )
    style: WebhookStyle = Field(
        WebhookStyle.STANDARD,
        description="Signature headers: `standard` (Standard Webhooks: `webhook-id`, "
        "`webhook-timestamp`, `webhook-signature`) or `github` (`X-Hub-Signature-256`).",
    )
    tolerance_s: float = Field(
        300,
        gt=0,
        description="Accepted clock skew of the timestamp header (`standard`); with `github`, "
        "how long a body is remembered: one sent again within it is a replay, not run.",
    )
    max_body_bytes: int = Field(
        MAX_WEBHOOK_BODY,
        gt=0,
        le=MAX_WEBHOOK_BODY,
        description="Larger bodies are refused (413); at most 1 MiB, the API's own limit.",
    )


class WebhookTrigger(Strict):
    """Runs the loop when its webhook is called."""

    type: Literal["webhook"] = _TYPE
    id: Identifier | None = _ID
    config: WebhookConfig = _CONFIG


class ManualConfig(Strict):
    """Manual triggers take no settings."""


class ManualTrigger(Strict):
    """Runs the loop only when asked (CLI or API)."""

    type: Literal["manual"] = _TYPE
    id: Identifier | None = _ID
    config: ManualConfig = Field(
        ManualConfig.model_construct(), description="None: only the CLI or API fires it."
    )


Trigger = Annotated[
    CronTrigger | EventTrigger | ThresholdTrigger | WebhookTrigger | ManualTrigger,
    Field(discriminator="type"),
]
