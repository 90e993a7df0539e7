"""The tools a stage may call, run with validated arguments. Every failure (unknown tool, bad
arguments, exception, deadline) is a result the model reads."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypedDict

import anyio.to_thread
from pydantic import ValidationError

from loopengine._json import JSONObject
from loopengine._suggestions import did_you_mean
from loopengine.skills import ToolDef

__all__ = ["TOOL_TIMEOUT_S", "FunctionSpec", "ToolOutcome", "ToolSpec", "Toolbox"]

TOOL_TIMEOUT_S = 30.0
"""A tool call's total deadline: past it the model is told, and the chat goes on."""


class FunctionSpec(TypedDict):
    """The function a tool offers (OpenAI ``FunctionDefinition``)."""

    name: str
    description: str
    parameters: JSONObject


class ToolSpec(TypedDict):
    """One entry of a request's ``tools`` (OpenAI ``ChatCompletionToolParam``)."""

    type: Literal["function"]
    function: FunctionSpec


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a call gave: ``result`` when ``ok``, else ``error`` (both fed back to the model)."""

    name: str
    arguments: JSONObject
    ok: bool
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0

    def content(self) -> str:
        """The tool message content: JSON of the result, or of the error."""
        body = {"result": self.result} if self.ok else {"error": self.error}
        return json.dumps(body, ensure_ascii=False, default=str)

    def as_dict(self) -> JSONObject:
        entry: JSONObject = {
            "name": self.name,
            "args": self.arguments,
            "ok": self.ok,
            "duration_ms": round(self.duration_ms, 3),
        }
        entry["result" if self.ok else "error"] = self.result if self.ok else self.error
        return entry


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            problems.append(f"missing required argument '{where}'")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


class Toolbox:
    """The tools a stage may call, by name."""

    def __init__(self, tools: Iterable[ToolDef], timeout_s: float = TOOL_TIMEOUT_S) -> None:
        self.tools = {definition.name: definition for definition in tools}
        self.timeout_s = timeout_s
        self._specs = {
            d.name: ToolSpec(
                type="function",
                function=FunctionSpec(
                    name=d.name, description=d.description, parameters=d.json_schema()
                ),
            )
            for d in self.tools.values()
        }

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """OpenAI ``tools`` for ``names`` (all when None); the schemas are built once."""
        if names is None:
            return list(self._specs.values())
        return [self._specs[name] for name in names if name in self._specs]

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run one call; never raises: failures come back as an error outcome."""
        started = time.perf_counter()
        args = dict(arguments)

        def failed(error: str) -> ToolOutcome:
            return ToolOutcome(
                name, args, False, error=error, duration_ms=(time.perf_counter() - started) * 1000
            )

        definition = self.tools.get(name)
        if definition is None:
            known = ", ".join(sorted(self.tools))
            return failed(
                f"unknown tool '{name}'{did_you_mean(name, self.tools)}; available tools: {known}"
            )
        try:
            model = definition.params.model_validate(args)
        except ValidationError as exc:
            return failed(f"invalid arguments for {name}: {_validation_message(exc)}")
        values = {field: getattr(model, field) for field in type(model).model_fields}
        try:
            with anyio.move_on_after(self.timeout_s) as deadline:
                if definition.is_async:
                    result = await definition.fn(**values)
                else:
                    call = partial(definition.fn, **values)
                    result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except Exception as exc:
            return failed(f"{type(exc).__name__}: {exc}")
        if deadline.cancelled_caught:
            return failed(f"{name} did not finish within {self.timeout_s:g} s: stopped")
        return ToolOutcome(
            name, args, True, result=result, duration_ms=(time.perf_counter() - started) * 1000
        )
