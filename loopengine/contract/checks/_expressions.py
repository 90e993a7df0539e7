"""Every expression and ``${ }`` template of a loop compiles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopengine._diagnostics import Path
from loopengine._suggestions import did_you_mean
from loopengine.contract.checks._walk import Checked, walk
from loopengine.errors import ExpressionError
from loopengine.expr import compile_expression, compile_template

__all__ = ["check_expressions"]

EXPRESSIONS: tuple[tuple[str, ...], ...] = (
    ("detect", "conditions", "*", "expression"),
    ("detect", "skip_if", "*", "expression"),
    ("decide", "decision_tree", "*", "condition"),
    ("act", "actions", "*", "items"),
    ("validate", "assertions", "*", "expression"),
    ("validate", "success_criteria", "*", "metric"),
    ("validate", "auto_rollback", "trigger_conditions", "*"),
    ("learn", "adjust", "*", "target"),
    ("learn", "record", "*", "value"),
    ("trigger", "config", "filter"),
    ("trigger", "config", "scope"),
    ("triggers", "*", "config", "filter"),
    ("triggers", "*", "config", "scope"),
)
_OVER_EVENTS = frozenset({"trigger", "triggers"})
"""Where expressions read an event (``data``, ``name``, ``source``), not the execution context."""
TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("detect", "sources", "*", "params"),
    ("analyze", "analysis_steps", "*", "params"),
    ("act", "actions", "*", "params"),
    ("act", "actions", "*", "rollback_params"),
    ("emit", "*", "data"),
    ("learn", "record", "*", "labels"),
)


def check_expressions(checked: Checked) -> None:
    """Every expression and template compiles, and each ``input.NAME`` of the execution context
    it reads names a declared param (a trigger's expressions read the event instead)."""
    data = checked.document.data
    params = data.get("params")
    declared = frozenset(params if isinstance(params, dict) else ())
    for pattern in EXPRESSIONS:
        for path, source in walk(data, pattern):
            if isinstance(source, str):
                try:
                    reads = compile_expression(source).reads("input")
                except ExpressionError as exc:
                    checked.error(path, str(exc))
                    continue
                if pattern[0] not in _OVER_EVENTS:
                    _check_inputs(checked, path, reads, declared)
    for pattern in TEMPLATES:
        for path, value in walk(data, pattern):
            for leaf_path, text in _strings(value, path):
                try:
                    reads = compile_template(text).reads("input")
                except ExpressionError as exc:
                    checked.error(leaf_path, str(exc))
                    continue
                _check_inputs(checked, leaf_path, reads, declared)


def _check_inputs(
    checked: Checked, path: Path, reads: frozenset[str], declared: frozenset[str]
) -> None:
    for name in sorted(reads - declared):
        known = f"params: {', '.join(sorted(declared))}" if declared else "the loop declares none"
        fix = did_you_mean(name, declared) or ": declare it under params:"
        checked.error(path, f"input.{name} is not a declared param ({known}){fix}")


def _strings(value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))
