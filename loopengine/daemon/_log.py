"""The daemon's log: one line per fire, start, end and non-run, as text or JSON lines, known secrets
masked."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from loopengine._secrets import redact
from loopengine.store import iso, queue
from loopengine.store.intake import Intake

__all__ = ["FLUSH_S", "ROUTINE", "DaemonLog", "log_intake"]

FLUSH_S = 0.05
"""The longest a routine line waits to be written: a drain's lines go out in one write every
``FLUSH_S``, where a write and a flush each cost a daemon ~0.1 ms of CPU an execution (the
system calls, and the store thread they let take the interpreter)."""
ROUTINE = frozenset({"fire", "start", "end", "skip"})
"""The kinds written once per job: flushed within ``FLUSH_S``; any other at once."""


class DaemonLog:
    """Writes one line per event, at once or, routine ones in a running event loop, within
    ``FLUSH_S`` (in order: a line written takes those waiting before it), so ``tail -f`` and
    log shippers see each in a blink. Any thread may write; what else writes to the stream
    writes the waiting lines first (``write_waiting``) to keep the order."""

    def __init__(self, stream: TextIO | None = None, *, as_json: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.as_json = as_json
        self.observers: list[Callable[[str, Mapping[str, Any]], None]] = []
        """Told each line's kind and fields as it is written (the daemon's metrics)."""
        self._waiting: list[str] = []
        """Routine lines not yet written."""
        self._due: asyncio.AbstractEventLoop | None = None
        """The loop a flush of the lines waiting is due on."""
        self._failed: OSError | ValueError | None = None
        """Why writing lines waiting failed (the stream closed, a character it cannot encode):
        raised by the next line that is not routine (not in a job's execution)."""
        self._lock = threading.Lock()

    def line(self, kind: str, message: str = "", /, **fields: Any) -> None:
        """Log a ``kind`` of event (``fire``, ``start``, ``end``, ``skip``, ``error``…) with its
        fields, every known secret masked in them and in ``message``."""
        message, fields = redact(message), redact(fields)
        now = iso(time.time())
        if self.as_json:
            record = {"ts": now, "kind": kind, **fields}
            if message:
                record["message"] = message
            text = json.dumps(record, default=str, separators=(",", ":"))
        else:
            pairs = " ".join(f"{key}={_text(value)}" for key, value in fields.items())
            text = " ".join(part for part in (now, f"{kind:<8}", pairs, message) if part)
        with self._lock:
            self._waiting.append(text + "\n")
        if kind in ROUTINE:
            self._flush_soon()
        else:
            self.flush()
        for observer in self.observers:
            observer(kind, fields)

    def write_waiting(self, flush: bool = False) -> None:
        """Write the lines waiting, in one write, before other output to the stream (or, with
        ``flush``, to another); why it failed is raised by the next line not routine."""
        try:
            with self._lock:
                self._due = None
                if self._waiting:
                    lines, self._waiting = self._waiting, []
                    self.stream.write("".join(lines))
            if flush:
                self.stream.flush()
        except (OSError, ValueError) as exc:
            with self._lock:
                self._failed = exc

    def flush(self) -> None:
        """Write out every line waiting; raises why writing lines failed since the last flush."""
        self.write_waiting(flush=True)
        with self._lock:
            failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _flush_soon(self) -> None:
        """Have the lines waiting written within ``FLUSH_S``: at once outside a running event
        loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        with self._lock:
            if self._due is loop:
                return
            self._due = loop
        loop.call_later(FLUSH_S, self.write_waiting, True)


def log_intake(log: DaemonLog, intake: Intake, **fields: Any) -> bool:
    """One log line for what became of a firing: ``fire`` with its job, or ``skip`` with why
    (a duplicate, already recorded by this or another daemon, says nothing). Whether it queued."""
    if intake.status == queue.QUEUED:
        log.line("fire", **fields, job=intake.job_id)
        return True
    if intake.status != "duplicate":
        log.line("skip", intake.reason or intake.status, **fields, status=intake.status)
    return False


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if text and " " not in text else json.dumps(text)
