"""An execution's log while it runs: what its skills say through ``ctx.logger``, INFO and above,
kept whatever the process's logging config, secrets masked, bounded in lines and characters, and
handed to the execution's next commit."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

from loopengine._secrets import redact
from loopengine.store.logs import LogLine

__all__ = ["MAX_LINES", "MAX_MESSAGE", "MAX_STEP", "ExecutionLog", "StepLogger", "level_name"]

MAX_LINES = 1_000
"""Lines an execution keeps; those after are counted, and the count is logged instead."""
MAX_MESSAGE = 4_000
"""Characters a line keeps; the rest is cut, and says how much was."""
MAX_STEP = 200
"""Characters of a step's name a line keeps (the store's column)."""
_LEVELS = ((logging.CRITICAL, "CRITICAL"), (logging.ERROR, "ERROR"), (logging.WARNING, "WARNING"))


def level_name(level: int) -> str:
    """The standard level at or under ``level`` (a custom level, 25 or 100, reads as the one it
    passes), so every line's level is one of five names."""
    return next((name for floor, name in _LEVELS if level >= floor), "INFO")


def _message(msg: object, args: tuple[Any, ...], exc_info: Any) -> str:
    """The line as ``logging`` would format it (a format that does not fit its arguments is shown
    with them), with the exception's type and message when one is logged."""
    text = str(msg)
    if args:
        try:
            text = text % args
        except (TypeError, ValueError, KeyError):
            text = f"{text} {args!r}"
    if exc_info:
        exc = exc_info[1] if isinstance(exc_info, tuple) else exc_info
        exc = sys.exception() if exc is True else exc
        if isinstance(exc, BaseException):
            text = f"{text}: {type(exc).__name__}: {exc}"
    text = str(redact(text))
    if len(text) > MAX_MESSAGE:
        text = f"{text[:MAX_MESSAGE]}… ({len(text) - MAX_MESSAGE:,} characters cut)"
    return text


class ExecutionLog:
    """The lines an execution logged since its last commit took them (``take``); at most
    ``MAX_LINES`` in all."""

    __slots__ = ("_clock", "_dropped", "_kept", "_lines", "_noted", "_where")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lines: list[LogLine] = []
        self._kept = 0
        self._dropped = 0
        self._noted = 0
        self._where = ("", "")
        """The phase and step of the last line not kept."""

    def add(self, level: int, phase: str, step: str, message: str) -> None:
        if self._kept >= MAX_LINES:
            self._dropped += 1
            self._where = (phase, step)
            return
        self._kept += 1
        line = LogLine(self._clock(), level_name(level), phase, step[:MAX_STEP], message)
        self._lines.append(line)

    def take(self) -> tuple[LogLine, ...]:
        """The lines logged since the last take, then how many were not kept since then."""
        lines, self._lines = self._lines, []
        if self._dropped > self._noted:
            count = self._dropped - self._noted
            self._noted = self._dropped
            note = f"{count:,} more lines not kept (an execution keeps {MAX_LINES:,})"
            lines.append(LogLine(self._clock(), "WARNING", *self._where, note))
        return tuple(lines)


class StepLogger(logging.LoggerAdapter[logging.Logger]):
    """A skill call's ``ctx.logger``: each record goes to ``logger`` as the process's logging
    config says, and INFO and above also to the execution's ``log``, with the call's phase and
    step."""

    def __init__(self, logger: logging.Logger, log: ExecutionLog, phase: str, step: str) -> None:
        super().__init__(logger, {"phase": phase, "step": step})
        self.kept = log
        self.phase = phase
        self.step = step

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if level >= logging.INFO:
            text = _message(msg, args, kwargs.get("exc_info"))
            self.kept.add(level, self.phase, self.step, text)
        if self.logger.isEnabledFor(level):
            msg, kwargs = self.process(msg, kwargs)
            self.logger.log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        """The call's phase and step join the record's ``extra`` instead of replacing it."""
        kwargs["extra"] = {**(self.extra or {}), **(kwargs.get("extra") or {})}
        return msg, kwargs
