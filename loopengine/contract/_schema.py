"""JSON Schemas (Draft 2020-12) of loop files and the config: generated from the models for
``loopengine schema``, read from the shipped files for validation."""

from __future__ import annotations

import json
import numbers
import operator
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from loopengine._resources import shipped_dir

__all__ = ["SchemaTest", "body_schema", "compile_schema", "shipped_schema"]


def body_schema(schema: dict[str, Any], definition: str) -> dict[str, Any]:
    """``schema`` narrowed to one of its definitions, for validating an unwrapped body."""
    return {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}


@cache
def shipped_schema(name: str) -> dict[str, Any]:
    """``schemas/{name}.schema.json`` as installed (wheel) or in the source tree; generated from
    the models only when neither ships it (a test keeps the shipped files equal to the models)."""
    file = shipped_dir("schemas") / f"{name}.schema.json"
    if file.is_file():
        schema: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
        return schema
    from loopengine.contract._generated import config_schema, loop_schema

    generate = {"loop": loop_schema, "config": config_schema}[name]
    return generate()


SchemaTest = Callable[[Any], bool]
"""A compiled schema: does this plain data (dict, list, str, int, float, bool, None) conform?"""

# Keywords that decide nothing here: annotations; then/else, read under "if"; and OpenAPI's
# discriminator, which jsonschema ignores too.
_SKIPPED = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
) | frozenset({"deprecated", "readOnly", "writeOnly", "then", "else", "discriminator"})
_OBJECT = ("properties", "additionalProperties", "required")
_BOUNDS = {
    "minimum": operator.ge,
    "maximum": operator.le,
    "exclusiveMinimum": operator.gt,
    "exclusiveMaximum": operator.lt,
}


def _yes(value: Any) -> bool:
    return True


def _no(value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES: dict[str, SchemaTest] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _all(tests: list[SchemaTest]) -> SchemaTest:
    if len(tests) == 1:
        return tests[0]

    def test(value: Any) -> bool:
        # Plain loops here and in object(): all() over a generator makes a check 2x slower.
        for one in tests:  # noqa: SIM110
            if not one(value):
                return False
        return True

    return test


class _Compiler:
    """Mirrors jsonschema's Draft 2020-12 keywords used by the generated schemas; a schema with
    any other keyword (or an ``enum`` of non-strings) answers no, which only costs speed."""

    def __init__(self, root: Mapping[str, object]) -> None:
        self.root = root
        self.refs: dict[str, SchemaTest] = {}

    def compile(self, schema: Any) -> SchemaTest:
        if schema is True:
            return _yes
        if not isinstance(schema, dict):
            return _no
        tests: list[SchemaTest] = []
        if any(keyword in schema for keyword in _OBJECT):
            tests.append(self.object(schema))
        for keyword, value in schema.items():
            if keyword in _SKIPPED or keyword in _OBJECT:
                continue
            test = self.keyword(keyword, value, schema)
            if test is None:
                return _no
            tests.append(test)
        return _all(tests) if tests else _yes

    def keyword(self, keyword: str, value: Any, schema: Mapping[str, object]) -> SchemaTest | None:
        if keyword == "$ref" and str(value).startswith("#/"):
            return self.ref(value)
        if keyword == "type":
            names = [value] if isinstance(value, str) else value
            if not all(name in _TYPES for name in names):
                return None
            kinds = [_TYPES[name] for name in names]
            return kinds[0] if len(kinds) == 1 else lambda v: any(kind(v) for kind in kinds)
        if keyword in ("enum", "const"):
            options = value if keyword == "enum" else [value]
            if not all(isinstance(option, str) for option in options):
                return None
            allowed = frozenset(options)
            return lambda v: isinstance(v, str) and v in allowed
        if keyword in ("anyOf", "oneOf", "allOf"):
            return self.combine(keyword, [self.compile(branch) for branch in value])
        if keyword == "if":
            return self.condition(value, schema)
        if keyword == "items":
            item = self.compile(value)
            return lambda v: not isinstance(v, list) or all(map(item, v))
        return _simple(keyword, value)

    def ref(self, ref: str) -> SchemaTest:
        if ref not in self.refs:
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target[part]
            compiled: list[SchemaTest] = []

            def forward(value: Any) -> bool:
                return compiled[0](value)

            self.refs[ref] = forward  # before compiling, so that a recursive definition ends
            compiled.append(self.compile(target))
        return self.refs[ref]

    def combine(self, keyword: str, branches: list[SchemaTest]) -> SchemaTest:
        if keyword == "anyOf":
            return lambda value: any(branch(value) for branch in branches)
        if keyword == "oneOf":
            return lambda value: sum(branch(value) for branch in branches) == 1
        return _all(branches)

    def condition(self, condition: Any, schema: Mapping[str, object]) -> SchemaTest:
        test_if = self.compile(condition)
        then = self.compile(schema.get("then", True))
        otherwise = self.compile(schema.get("else", True))
        return lambda value: then(value) if test_if(value) else otherwise(value)

    def object(self, schema: dict[str, Any]) -> SchemaTest:
        properties = {name: self.compile(sub) for name, sub in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        extra = self.compile(schema.get("additionalProperties", True))

        def test(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for name in required:
                if name not in value:
                    return False
            for key, item in value.items():  # noqa: SIM110
                if not properties.get(key, extra)(item):
                    return False
            return True

        return test


def _simple(keyword: str, value: Any) -> SchemaTest | None:
    """Keywords on one kind of value; other kinds pass, as in JSON Schema."""
    if keyword in _BOUNDS:
        compare = _BOUNDS[keyword]
        return lambda v: not _is_number(v) or compare(v, value)
    if keyword == "pattern":
        search = re.compile(value).search
        return lambda v: not isinstance(v, str) or search(v) is not None
    if keyword == "minLength":
        return lambda v: not isinstance(v, str) or len(v) >= value
    if keyword == "maxLength":
        return lambda v: not isinstance(v, str) or len(v) <= value
    if keyword == "minItems":
        return lambda v: not isinstance(v, list) or len(v) >= value
    if keyword == "maxItems":
        return lambda v: not isinstance(v, list) or len(v) <= value
    return None


def compile_schema(schema: Mapping[str, object]) -> SchemaTest:
    """A fast yes/no test equal to jsonschema's verdict on ``schema``, ``$ref``s resolved within it
    (it answers no to what it cannot check, so a no must be confirmed by jsonschema)."""
    return _Compiler(schema).compile(schema)
