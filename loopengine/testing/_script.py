"""A script file of ``python -m loopengine.testing``: JSON naming what each model answers.

    {"qwen3:1.7b": [{"tool_call": "read_file", "arguments": {"path": "facts.txt"}},
                    {"reply": "Done."}],
     "*": {"forever": {"reply": "I am a scripted model."}}}

A step is ``{"reply": TEXT}``, ``{"tool_call": NAME, "arguments": {...}}``, ``{"status": CODE}``,
``{"echo": true}`` or ``{"forever": STEP}``; a model's script is a list of steps, or one
``forever`` or ``echo`` step. Model ``"*"`` answers the models without a script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine._json import loads
from loopengine.errors import ContractError
from loopengine.testing import (
    Answering,
    Forever,
    Response,
    Script,
    echo,
    forever,
    reply,
    status,
    tool_call,
)

__all__ = ["MAX_SCRIPT_BYTES", "read_script"]

MAX_SCRIPT_BYTES = 1_048_576
"""Largest script file read."""
_STEPS = "reply, tool_call (with arguments), status, echo or forever"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _answer(value: Any, where: str) -> Response | Answering:
    """One answer: ``reply``, ``tool_call`` (with ``arguments``), ``status`` or ``echo``."""
    if isinstance(value, dict) and value:
        kind = next((key for key in value if key != "arguments"), "arguments")
        given, rest, arguments = value[kind], value.keys() - {kind}, value.get("arguments", {})
        if kind == "tool_call" and rest <= {"arguments"} and isinstance(arguments, dict):
            if isinstance(given, str):
                return tool_call(given, arguments)
        elif kind == "reply" and not rest and isinstance(given, str):
            return reply(given)
        elif kind == "status" and not rest and type(given) is int and 100 <= given <= 599:
            return status(given)
        elif kind == "echo" and not rest and given is True:
            return echo()
    raise ContractError(f"{where}: {_shown(value)} is no step; write one of {_STEPS}")


def _step(value: Any, where: str) -> Response | Forever | Answering:
    """An answer, or ``{"forever": ANSWER}``."""
    if isinstance(value, dict) and value.keys() == {"forever"}:
        answer = _answer(value["forever"], f"{where}.forever")
        return answer if isinstance(answer, Answering) else forever(answer)
    return _answer(value, where)


def _script(value: Any, where: str) -> Script | Forever | Answering:
    if isinstance(value, list):
        return [_step(step, f"{where}[{index}]") for index, step in enumerate(value)]
    step = _step(value, where)
    if isinstance(step, Response):
        raise ContractError(f"{where}: a script is a list of steps, or one forever or echo step")
    return step


def read_script(path: Path) -> dict[str, Script | Forever | Answering]:
    """Each model's script in the file at ``path``; ``ContractError`` saying what is wrong."""
    try:
        with path.open("rb") as file:
            text = file.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise ContractError(f"{path}: cannot be read ({exc.strerror})") from None
    if len(text) > MAX_SCRIPT_BYTES:
        raise ContractError(f"{path}: over {MAX_SCRIPT_BYTES:,} bytes")
    try:
        document = loads(text)
    except (ValueError, RecursionError) as exc:
        raise ContractError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ContractError(f'{path}: write an object naming each model\'s script: {{"m": [...]}}')
    return {str(model): _script(value, f"{path}: {model}") for model, value in document.items()}
