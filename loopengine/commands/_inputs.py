"""``--input k=v``: values parsed as JSON when they are JSON, checked against the loop's params."""

from __future__ import annotations

import json
from typing import Any

from loopengine._suggestions import did_you_mean
from loopengine.contract import Loop
from loopengine.errors import ContractError

__all__ = ["parse_inputs"]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _checked(name: str, text: str, value: Any, schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator  # only runs given --input pay for it

    validator = Draft202012Validator(schema)
    first = next(iter(validator.iter_errors(value)), None)
    if first is None:
        return value
    if value != text and next(iter(validator.iter_errors(text)), None) is None:
        return text
    raise ContractError(f"--input {name}={text}: {first.message}")


def parse_inputs(pairs: list[str], loop: Loop) -> dict[str, Any]:
    """Inputs for ``loop`` from ``k=v`` pairs; a clear error for a bad pair, name or type."""
    params = loop.spec.params
    inputs: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ContractError(f"--input {pair!r}: write NAME=VALUE, e.g. --input limit=10")
        if params and name not in params:
            known = ", ".join(sorted(params))
            raise ContractError(
                f"--input {name}: loop '{loop.id}' has no param '{name}' (params: {known})"
                + did_you_mean(name, params)
            )
        value = _value(text)
        if name in params:
            value = _checked(name, text, value, params[name])
        inputs[name] = value
    return inputs
