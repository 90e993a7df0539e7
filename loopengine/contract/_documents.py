"""One YAML document checked against a schema definition and built into its model."""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from loopengine.contract._diagnostics import Diagnostic
from loopengine.contract._schema import body_schema, config_schema, loop_schema
from loopengine.contract._schema_errors import schema_diagnostics
from loopengine.contract._yaml_source import YamlDocument

__all__ = ["build_model", "config_validator", "loop_validator", "schema_check"]

M = TypeVar("M", bound=BaseModel)


@cache
def loop_validator() -> Draft202012Validator:
    return Draft202012Validator(body_schema(loop_schema(), "LoopSpec"))


@cache
def config_validator() -> Draft202012Validator:
    return Draft202012Validator(body_schema(config_schema(), "Config"))


def schema_check(validator: Draft202012Validator, document: YamlDocument) -> list[Diagnostic]:
    """Pass 1: the schema errors of ``document`` (a non-mapping root is one error)."""
    if not isinstance(document.data, dict):
        kind = "nothing" if document.data is None else type(document.data).__name__
        return [document.diagnostic((), f"expected a mapping of keys at the top, got {kind}")]
    return schema_diagnostics(validator, document)


def build_model(model: type[M], document: YamlDocument) -> tuple[M | None, list[Diagnostic]]:
    """Build the model of a schema-valid document; errors the schema missed become diagnostics."""
    try:
        return model.model_validate(document.data), []
    except ValidationError as exc:
        return None, [_diagnostic(document, error) for error in exc.errors()]


def _diagnostic(document: YamlDocument, error: Any) -> Diagnostic:
    path = tuple(part for part in error["loc"] if isinstance(part, str | int))
    message = str(error["msg"]).removeprefix("Value error, ")
    return document.diagnostic(path, message)
