"""A loop's inputs checked against its ``params`` (JSON Schema fragments): ``--input`` on the
command line, the HTTP API's trigger body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopengine._suggestions import did_you_mean
from loopengine.triggers import nesting

__all__ = ["MAX_INPUT_DEPTH", "input_problems", "param_problem", "unknown_param"]

MAX_INPUT_DEPTH = 32
"""Most levels an input value nests (it is carried in the context and stored with the run)."""


def unknown_param(name: str, params: Mapping[str, Any]) -> str | None:
    """Why ``name`` is no param of a loop declaring ``params``, or None when it is one."""
    if name in params:
        return None
    if not params:
        return f"no param {name!r} (the loop declares none, so it takes no inputs)"
    return f"no param {name!r} (params: {', '.join(sorted(params))}){did_you_mean(name, params)}"


def param_problem(fragment: Mapping[str, Any], value: Any) -> str | None:
    """The first reason ``fragment`` refuses ``value``, or None when it fits; a value nested
    past ``MAX_INPUT_DEPTH`` never does."""
    if nesting(value) > MAX_INPUT_DEPTH:
        return f"nested more than {MAX_INPUT_DEPTH} levels: flatten it"
    from jsonschema import Draft202012Validator  # only inputs given pay for it

    first = next(iter(Draft202012Validator(fragment).iter_errors(value)), None)
    return None if first is None else str(first.message)


def input_problems(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``inputs``: unknown names and values their param refuses; empty when
    they fit."""
    problems = []
    for name, value in inputs.items():
        if unknown := unknown_param(name, params):
            problems.append(unknown)
        elif refused := param_problem(params[name], value):
            problems.append(f"{name}: {refused}")
    return problems
