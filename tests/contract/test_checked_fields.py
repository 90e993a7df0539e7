"""The checks compile every expression and template the loop models do: ``validate`` checks
without building the models, so a field the checks miss would pass ``validate`` and fail ``run``."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from loopengine.contract._fields import ExpressionField, TemplateField
from loopengine.contract._loop import LoopSpec
from loopengine.contract.checks._expressions import EXPRESSIONS, TEMPLATES

Path = tuple[str, ...]


def _paths(annotation: Any, path: Path, marked: Any, seen: frozenset[type]) -> Iterator[Path]:
    """Where values of the ``marked`` field type sit under ``annotation``, with ``*`` for any
    list index or mapping key."""
    if annotation == marked:
        yield path
        return
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        yield from _paths(get_args(annotation)[0], path, marked, seen)
    elif origin in (typing.Union, types.UnionType):
        for member in get_args(annotation):
            yield from _paths(member, path, marked, seen)
    elif origin in (list, tuple):
        yield from _paths(get_args(annotation)[0], (*path, "*"), marked, seen)
    elif origin is dict:
        yield from _paths(get_args(annotation)[1], (*path, "*"), marked, seen)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        for name, info in annotation.model_fields.items():
            key = info.alias or name
            inner = info.annotation
            if info.metadata:
                inner = typing.Annotated[inner, *info.metadata]
            yield from _paths(inner, (*path, key), marked, seen | {annotation})


def _model_paths(marked: Any) -> set[Path]:
    return set(_paths(LoopSpec, (), marked, frozenset()))


def test_every_expression_field_is_checked() -> None:
    assert _model_paths(ExpressionField) == set(EXPRESSIONS)


def test_every_template_field_is_checked() -> None:
    assert _model_paths(TemplateField) == set(TEMPLATES)
