"""Inputs given to a loop as data (the HTTP API's trigger body) checked against its params."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopengine._suggestions import did_you_mean

__all__ = ["input_problems"]


def input_problems(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``inputs`` for a loop declaring ``params`` (JSON Schema fragments):
    unknown names and values their fragment refuses; empty when they fit."""
    problems = []
    for name, value in inputs.items():
        if name not in params:
            known = ", ".join(sorted(params)) or "none"
            problems.append(f"no param {name!r} (params: {known}){did_you_mean(name, params)}")
            continue
        from jsonschema import Draft202012Validator

        first = next(iter(Draft202012Validator(params[name]).iter_errors(value)), None)
        if first is not None:
            problems.append(f"{name}: {first.message}")
    return problems
