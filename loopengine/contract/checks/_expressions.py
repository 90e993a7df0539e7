"""Every expression and ``${ }`` template of a loop compiles."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loopengine.contract._diagnostics import Path
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
TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("detect", "sources", "*", "params"),
    ("analyze", "analysis_steps", "*", "params"),
    ("act", "actions", "*", "params"),
    ("act", "actions", "*", "rollback_params"),
    ("emit", "*", "data"),
    ("learn", "record", "*", "labels"),
)


def check_expressions(checked: Checked) -> None:
    data = checked.document.data
    for pattern in EXPRESSIONS:
        for path, source in walk(data, pattern):
            if isinstance(source, str):
                try:
                    compile_expression(source)
                except ExpressionError as exc:
                    checked.error(path, str(exc))
    for pattern in TEMPLATES:
        for path, value in walk(data, pattern):
            for leaf_path, text in _strings(value, path):
                try:
                    compile_template(text)
                except ExpressionError as exc:
                    checked.error(leaf_path, str(exc))


def _strings(value: Any, path: Path) -> Iterator[tuple[Path, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))
