"""Field types of the loop models: compiled expressions, templates, durations."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from loopengine.expr import (
    Expression,
    Template,
    compile_expression,
    compile_template,
    parse_duration,
)

__all__ = ["DURATION_PATTERN", "Duration", "ExpressionField", "TemplateField", "no_params"]

DURATION_PATTERN = r"^\s*(\d+(\.\d+)?\s*(ms|s|m|h|d)\s*)+$"


def _expression(value: Any) -> Any:
    return compile_expression(value) if isinstance(value, str) else value


def _template(value: Any) -> Any:
    return value if isinstance(value, Template) else compile_template(value)


def no_params() -> Template:
    """A fresh empty params template (the default of every ``params:`` key)."""
    return compile_template({})


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else value


ExpressionField = Annotated[
    Expression,
    BeforeValidator(_expression),
    PlainSerializer(lambda expression: expression.source, return_type=str),
    WithJsonSchema({"type": "string", "minLength": 1}),
]
"""An expression over the execution context, compiled when the loop loads."""

TemplateField = Annotated[
    Template,
    BeforeValidator(_template),
    PlainSerializer(lambda template: template.source),
    WithJsonSchema({"type": "object"}),
]
"""Skill params whose strings may hold ``${ expr }`` references."""

Duration = Annotated[
    float,
    BeforeValidator(_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": DURATION_PATTERN},
            ],
            "examples": ["90s", "5m", "1h30m"],
        }
    ),
]
"""Seconds, written as a number or with units (``90s``, ``5m``, ``1h30m``)."""
