"""Pass 1 of validation: JSON Schema errors of a document, translated into plain sentences.

A sentence names a wrong value's kind, never its text (a file that is not a loop, a link to a
file of secrets say, gets its keys named, cut short, and nothing else); numbers are shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from loopengine._diagnostics import Diagnostic, Path, shown_key
from loopengine._suggestions import did_you_mean, hint
from loopengine.contract._fields import DURATION_PATTERN
from loopengine.contract._yaml_source import YamlDocument

__all__ = ["schema_diagnostics"]

_WRONG_TYPE = "expected "
"""How a type error reads (``expected a string, got list []``)."""
_CHOICES = "; expected one of: "

_PATTERN_HINTS = {
    DURATION_PATTERN: "a duration such as 90s, 5m or 1h30m",
    "^[a-z][a-z0-9_]*$": "lower-case letters, digits and '_', first a letter (e.g. seo_audit_loop)",
    "^https?://": "an http:// or https:// URL",
}
_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "nothing",
}


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,23}")
"""What a name of a closed set looks like: quoted back when misspelled."""


def _shown(value: Any) -> str:
    """A value of the schema (not of the file) as a message quotes it."""
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _number(value: Any) -> str:
    """`` 5`` for a number of the file, which a message may show; '' for anything else."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return f" {json.dumps(value)}" if is_number else ""


def _choice(value: Any) -> str:
    """A wrong choice among names (a trigger type, an enum value) as a message shows it: a short
    word (``'cronn'``) is a typo worth quoting; anything else shows as a number or not at all."""
    if isinstance(value, str) and _WORD.fullmatch(value):
        return f" {value!r}"
    return _number(value)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return {dict: "mapping", list: "list", str: "string", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )


def _resolved(validator: Draft202012Validator, schema: Any) -> Any:
    """Follow local ``#/...`` references (the only kind the generated schemas use)."""
    while isinstance(schema, dict) and str(schema.get("$ref", "")).startswith("#/"):
        target: Any = validator.schema
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        schema = target
    return schema


def _branch_errors(
    validator: Draft202012Validator, error: ValidationError
) -> list[ValidationError]:
    """The sub-errors of the union branch the author evidently meant, or [] when none fits."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    schemas: Any = error.validator_value
    instance = error.instance
    mapping = _discriminator(validator, schemas)
    if mapping and isinstance(instance, dict):
        chosen = instance.get("type")
        for index, branch in enumerate(schemas):
            if isinstance(chosen, str) and branch.get("$ref") == mapping.get(chosen):
                return branches.get(index, [])
        return []
    depth = len(error.absolute_path)
    fitting = [
        subs
        for subs in branches.values()
        if not any(len(sub.absolute_path) == depth and sub.validator == "type" for sub in subs)
    ]
    return fitting[0] if fitting else []


def _discriminator(validator: Draft202012Validator, schemas: Any) -> dict[str, str] | None:
    consts: dict[str, str] = {}
    for branch in schemas if isinstance(schemas, list) else ():
        target = _resolved(validator, branch)
        const = (
            target.get("properties", {}).get("type", {}).get("const")
            if isinstance(target, dict)
            else None
        )
        if const is None or "$ref" not in branch:
            return None
        consts[const] = branch["$ref"]
    return consts or None


def _union_message(validator: Draft202012Validator, error: ValidationError) -> str:
    schemas: Any = error.validator_value
    mapping = _discriminator(validator, schemas)
    if mapping and isinstance(error.instance, dict):
        given = error.instance.get("type")
        if given is None:
            return f"missing required key 'type' ({', '.join(mapping)})"
        return f"unknown type{_choice(given)}; {hint(str(given), mapping)}"
    kinds = []
    for branch in schemas:
        target = _resolved(validator, branch)
        kind = target.get("type") if isinstance(target, dict) else None
        if isinstance(kind, str):
            kinds.append(_TYPE_NAMES.get(kind, kind))
    expected = " or ".join(dict.fromkeys(kinds)) or "another value"
    return f"{_WRONG_TYPE}{expected}, got {_kind(error.instance)}{_number(error.instance)}"


def _messages(
    validator: Draft202012Validator, error: ValidationError
) -> Iterator[tuple[Path, str, bool]]:
    path: Path = tuple(error.absolute_path)
    kind = str(error.validator)
    value: Any = error.validator_value
    if kind in ("anyOf", "oneOf"):
        chosen = _branch_errors(validator, error)
        if chosen:
            for sub in chosen:
                yield from _messages(validator, sub)
        else:
            yield path, _union_message(validator, error), False
    elif kind == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        for key in error.instance:
            if key not in known:
                suffix = hint(str(key), known)
                message = f"unknown key '{shown_key(str(key))}'" + (f"; {suffix}" if suffix else "")
                yield (*path, key), message, True
    elif kind == "required":
        instance: Any = error.instance
        missing = [name for name in value if name not in instance]
        for name in missing:
            yield path, f"missing required key '{name}'", False
    elif kind == "type":
        expected = " or ".join(
            _TYPE_NAMES.get(t, t) for t in ([value] if isinstance(value, str) else value)
        )
        yield (
            path,
            f"{_WRONG_TYPE}{expected}, got {_kind(error.instance)}{_number(error.instance)}",
            False,
        )
    elif kind == "enum":
        options = [str(option) for option in value]
        suggestion = did_you_mean(str(error.instance), options)
        listed = ", ".join(options)
        yield (
            path,
            f"invalid value{_choice(error.instance)}{_CHOICES}{listed}{suggestion}",
            False,
        )
    elif kind == "pattern":
        wanted = _PATTERN_HINTS.get(value, f"the pattern {value}")
        yield path, f"invalid value: expected {wanted}", False
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[
            kind
        ]
        yield path, f"must be {sign} {value}, got{_number(error.instance)}", False
    elif kind == "minLength":
        yield path, "must not be empty", False
    elif kind == "minItems":
        yield path, f"needs at least {value} item{'s' if value != 1 else ''}", False
    elif kind == "const":
        yield path, f"must be {_shown(value)}", False
    else:
        yield path, error.message, False


def schema_diagnostics(validator: Draft202012Validator, document: YamlDocument) -> list[Diagnostic]:
    """Every schema error of ``document``, each once, in file order; a value outside a list of
    choices is told so once (its choices), not also that it has the wrong type."""
    found: dict[tuple[Path, str], Diagnostic] = {}
    for error in validator.iter_errors(document.data):
        for path, message, at_key in _messages(validator, error):
            found.setdefault((path, message), document.diagnostic(path, message, at_key=at_key))
    choices = {path for path, message in found if _CHOICES in message}
    kept = [
        diagnostic
        for (path, message), diagnostic in found.items()
        if not (path in choices and message.startswith(_WRONG_TYPE))
    ]
    return sorted(kept, key=lambda d: (d.line, d.column))
