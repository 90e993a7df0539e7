"""One YAML document checked against a schema definition and built into its model."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from loopengine._diagnostics import Diagnostic
from loopengine.contract._schema import SchemaTest, body_schema, compile_schema, shipped_schema
from loopengine.contract._yaml_source import YamlDocument

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from pydantic import BaseModel

__all__ = ["SchemaValidator", "build_model", "config_validator", "loop_validator", "schema_check"]

M = TypeVar("M", bound="BaseModel")


@dataclass(frozen=True)
class SchemaValidator:
    """One definition of a shipped schema: a compiled yes/no test for every document, and
    jsonschema to locate the errors of those it refuses (imported only then: most files pass)."""

    schema: dict[str, Any]
    accepts: SchemaTest

    @classmethod
    def of(cls, name: str, definition: str) -> SchemaValidator:
        """The validator of ``definition`` in the shipped schema ``name``."""
        schema = body_schema(shipped_schema(name), definition)
        return cls(schema, compile_schema(schema))

    @cached_property
    def jsonschema(self) -> Draft202012Validator:
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.schema)


@cache
def loop_validator() -> SchemaValidator:
    return SchemaValidator.of("loop", "LoopSpec")


@cache
def config_validator() -> SchemaValidator:
    return SchemaValidator.of("config", "Config")


def schema_check(validator: SchemaValidator, document: YamlDocument) -> list[Diagnostic]:
    """Pass 1: the schema errors of ``document`` (a non-mapping root is one error)."""
    if not isinstance(document.data, dict):
        kind = "nothing" if document.data is None else type(document.data).__name__
        return [document.diagnostic((), f"expected a mapping of keys at the top, got {kind}")]
    if validator.accepts(document.data):
        return []
    from loopengine.contract._schema_errors import schema_diagnostics

    return schema_diagnostics(validator.jsonschema, document)


def build_model(model: type[M], document: YamlDocument) -> tuple[M | None, list[Diagnostic]]:
    """Build the model of a schema-valid document; errors the schema missed become diagnostics."""
    from pydantic import ValidationError

    try:
        return model.model_validate(document.data), []
    except ValidationError as exc:
        return None, [_diagnostic(document, error) for error in exc.errors()]


def _diagnostic(document: YamlDocument, error: Any) -> Diagnostic:
    path = tuple(part for part in error["loc"] if isinstance(part, str | int))
    message = str(error["msg"]).removeprefix("Value error, ")
    return document.diagnostic(path, message)
