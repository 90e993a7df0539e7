"""The JSON Schemas of loop files and of ``loopengine.yaml``, generated from the models (the
shipped ``schemas/`` are these; a test keeps them equal)."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

__all__ = ["SCHEMA_URL_BASE", "config_schema", "loop_schema"]

SCHEMA_URL_BASE = "https://loopengine.dev/schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class _AuthorSchema(GenerateJsonSchema):
    """Describes what authors write: an optional key is omitted, never set to null."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        generated = super().default_schema(schema)
        if generated.get("default", ...) is None:
            del generated["default"]
        return generated


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, schema_generator=_AuthorSchema)
    definitions: dict[str, Any] = schema.pop("$defs", {})
    definitions[model.__name__] = schema
    return definitions


@cache
def loop_schema() -> dict[str, Any]:
    """The loop file schema: a bare loop mapping, or one under the root key ``Loop:``."""
    from loopengine.contract._loop import LoopSpec

    return {
        "$schema": DRAFT,
        "$id": f"{SCHEMA_URL_BASE}/loop.schema.json",
        "title": "loopengine loop",
        "description": "A loop contract: its trigger and its seven phases (detect → store).",
        "$defs": _model_schema(LoopSpec),
        "if": {"type": "object", "required": ["Loop"]},
        "then": {
            "type": "object",
            "properties": {
                "Loop": {
                    "$ref": "#/$defs/LoopSpec",
                    "description": "The loop (the seed's root key).",
                }
            },
            "required": ["Loop"],
            "additionalProperties": False,
        },
        "else": {"$ref": "#/$defs/LoopSpec"},
    }


@cache
def config_schema() -> dict[str, Any]:
    """The schema of ``loopengine.yaml``."""
    from loopengine.contract._config import Config

    return {
        "$schema": DRAFT,
        "$id": f"{SCHEMA_URL_BASE}/config.schema.json",
        "title": "loopengine configuration",
        "description": "loopengine.yaml: database, plugins, cluster, storage, daemon, autolearn.",
        "$defs": _model_schema(Config),
        "$ref": "#/$defs/Config",
    }
