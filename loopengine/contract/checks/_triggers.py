"""Triggers: exactly one of trigger/triggers, valid cron and time zone, patterns, hysteresis."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from zoneinfo import available_timezones

from loopengine._diagnostics import Path
from loopengine._suggestions import hint
from loopengine.contract.checks._walk import Checked, Env, at
from loopengine.errors import ExpressionError
from loopengine.expr import compile_template
from loopengine.triggers import cron_problem, pattern_problem, secret_problem, time_zone

__all__ = ["check_triggers"]

_BELOW = {">", ">="}
_ABOVE = {"<", "<="}


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def _triggers(
    data: Mapping[str, object], checked: Checked
) -> list[tuple[Path, Mapping[str, object]]]:
    single, several = data.get("trigger"), data.get("triggers")
    if single is None and several is None:
        checked.error((), "missing required key 'trigger' (or 'triggers:' for several)")
    if single is not None and several is not None:
        checked.error(("triggers",), "write either 'trigger' or 'triggers', not both", at_key=True)
    found: list[tuple[Path, Mapping[str, object]]] = []
    if isinstance(single, dict):
        found.append((("trigger",), single))
    if isinstance(several, list):
        found.extend((("triggers", i), t) for i, t in enumerate(several) if isinstance(t, dict))
    return found


def _check_cron(path: Path, config: Mapping[str, object], checked: Checked) -> None:
    expression = config.get("expression")
    if isinstance(expression, str) and (problem := cron_problem(expression)):
        checked.error((*path, "expression"), problem)
    zone = config.get("timezone")
    if isinstance(zone, str) and time_zone(zone) is None:
        checked.error((*path, "timezone"), f"unknown time zone {zone!r}; {hint(zone, _zones())}")


def _check_threshold(path: Path, config: Mapping[str, object], checked: Checked) -> None:
    operator, value, clear = config.get("operator"), config.get("value"), config.get("clear_value")
    if not isinstance(value, int | float) or not isinstance(clear, int | float):
        return
    if not isinstance(operator, str):
        return
    if (operator in _BELOW and clear > value) or (operator in _ABOVE and clear < value):
        side = "at or below" if operator in _BELOW else "at or above"
        checked.error(
            (*path, "clear_value"),
            f"clear_value {clear} must be {side} value {value} for operator '{operator}' "
            "(the metric re-arms once back past it)",
        )


def _check_webhook(path: Path, config: Mapping[str, object], checked: Checked, env: Env) -> None:
    """A secret must give a key of at least 16 bytes where the loop runs; one written in clear
    is a warning, one whose variable is not set an error only where ``env`` requires it."""
    secret = config.get("secret")
    if not isinstance(secret, str):
        return
    if (problem := secret_problem(secret, env.environ)) is not None:
        warned = problem.unset and not env.secrets_required
        (checked.warning if warned else checked.error)((*path, "secret"), problem.message)
    if _in_clear(secret):
        checked.warning(
            (*path, "secret"),
            "webhook secret written in clear: put it in the environment and write ${ secret.NAME }",
        )


def _in_clear(secret: str) -> bool:
    try:
        return not compile_template(secret).secret_names
    except ExpressionError:
        return False


def _check_event(path: Path, config: Mapping[str, object], checked: Checked) -> None:
    pattern = at(config, "event_pattern")
    if isinstance(pattern, str) and (problem := pattern_problem(pattern)):
        checked.error((*path, "event_pattern"), problem)


def check_triggers(checked: Checked, env: Env) -> None:
    data = checked.document.data
    triggers = _triggers(data, checked)
    seen: dict[str, Path] = {}
    for path, trigger in triggers:
        config = trigger.get("config")
        trigger_id = trigger.get("id")
        if isinstance(trigger_id, str):
            if trigger_id in seen:
                checked.error((*path, "id"), f"duplicate trigger id '{trigger_id}'")
            seen.setdefault(trigger_id, path)
        if not isinstance(config, dict):
            continue
        kind = trigger.get("type")
        if kind == "cron":
            _check_cron((*path, "config"), config, checked)
        elif kind == "threshold":
            _check_threshold((*path, "config"), config, checked)
        elif kind == "webhook":
            _check_webhook((*path, "config"), config, checked, env)
        elif kind == "event":
            _check_event((*path, "config"), config, checked)
