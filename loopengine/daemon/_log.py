"""The daemon's log: one line per fire, start, end and non-run, as text or JSON lines, known secrets
masked."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from loopengine._secrets import redact
from loopengine.store import iso, queue
from loopengine.store.intake import Intake

__all__ = ["DaemonLog", "log_intake"]


class DaemonLog:
    """Writes one flushed line per event, so ``tail -f`` and log shippers see it at once."""

    def __init__(self, stream: TextIO | None = None, *, as_json: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.as_json = as_json
        self.observers: list[Callable[[str, Mapping[str, Any]], None]] = []
        """Told each line's kind and fields as it is written (the daemon's metrics)."""

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
        self.stream.write(text + "\n")
        self.stream.flush()
        for observer in self.observers:
            observer(kind, fields)


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
