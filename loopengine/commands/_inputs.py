"""``--input k=v``: values parsed as JSON when they are JSON, checked against the loop's params."""

from __future__ import annotations

from typing import Any

from loopengine._json import loads
from loopengine.contract import MAX_INPUT_DEPTH, Loop, param_problem, unknown_param
from loopengine.errors import ContractError
from loopengine.triggers import nesting

__all__ = ["parse_inputs"]


def _value(name: str, text: str) -> Any:
    """``text`` read as JSON when it is JSON of finite numbers (nested at most
    ``MAX_INPUT_DEPTH`` levels); ``NaN`` is the text ``NaN``."""
    too_deep = ContractError(f"--input {name}: nested more than {MAX_INPUT_DEPTH} levels")
    try:
        value = loads(text)
    except RecursionError:
        raise too_deep from None
    except ValueError:
        return text
    if nesting(value) > MAX_INPUT_DEPTH:
        raise too_deep
    return value


def _checked(name: str, text: str, value: Any, fragment: dict[str, Any]) -> Any:
    """``value`` (``text`` read as JSON) when the param takes it, else ``text`` when it takes
    that: ``--input name=007`` may mean a string."""
    problem = param_problem(fragment, value)
    if problem is None:
        return value
    if value != text and param_problem(fragment, text) is None:
        return text
    raise ContractError(f"--input {name}={text}: {problem}")


def parse_inputs(pairs: list[str], loop: Loop) -> dict[str, Any]:
    """Inputs for ``loop`` from ``k=v`` pairs; a clear error for a bad pair, name or type."""
    params = loop.spec.params
    inputs: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ContractError(f"--input {pair!r}: write NAME=VALUE, e.g. --input limit=10")
        if unknown := unknown_param(name, params):
            raise ContractError(f"--input {name}: loop '{loop.id}' has {unknown}")
        value = _value(name, text)
        if name in params:
            value = _checked(name, text, value, params[name])
        inputs[name] = value
    return inputs
