"""Live lines on a terminal: each phase as it ends, and what long skills report while they run
(stages and tool calls of LLM chains)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopengine.commands._console import Console

if TYPE_CHECKING:
    from loopengine.skills import Progress
    from loopengine.store import PhaseResult

__all__ = ["LivePhases", "live_progress", "phase_note", "progress_line"]

_MARKS = {True: ("✓", "green"), False: ("✗", "red")}


def progress_line(event: str, fields: Mapping[str, Any]) -> str | None:
    """One line of live progress for a chain event; None for events not shown."""
    if event == "llm.stage":
        return f"{fields['node']} · {fields['role']}…"
    if event == "llm.tool":
        arguments = json.dumps(fields.get("args") or {}, ensure_ascii=False)
        if len(arguments) > 80:
            arguments = arguments[:77] + "…"
        outcome = "ok" if fields.get("ok") else f"error: {fields.get('error')}"
        return f"  ↳ {fields['name']}({arguments}) {outcome}"
    if event == "llm.stage_done" and fields.get("status") != "ok":
        reason = fields.get("reason")
        return f"  {fields['node']} {fields['status']}" + (f": {reason}" if reason else "")
    return None


def live_progress(console: Console) -> Progress:
    """A progress hook printing each shown event as a dim line."""

    def progress(event: str, fields: Mapping[str, Any]) -> None:
        if (line := progress_line(event, fields)) is not None:
            console.print(console.style(line, "dim"))

    return progress


class LivePhases:
    """Phase lines as each phase ends, shown only to a person at a terminal (not with ``--json``);
    commands that run phases (``run``, ``approve``, ``resume``) then print the summary without
    repeating them."""

    def __init__(self, console: Console, as_json: bool) -> None:
        self.console = console
        self.live = console.interactive and not as_json

    @property
    def progress(self) -> Progress | None:
        return live_progress(self.console) if self.live else None

    def __call__(self, loop_id: str, record: PhaseResult) -> None:
        if self.live:
            self.console.print(self._line(record))

    def _line(self, record: PhaseResult) -> str:
        style = self.console.style
        if "skipped" in record.data:
            return style(f"  – {record.phase:<9} skipped ({record.data['skipped']})", "dim")
        mark, colour = _MARKS[record.success]
        text = f"  {style(mark, colour)} {record.phase:<9} {record.duration_ms:>9.1f} ms"
        if record.outcome:
            text += f"  → {record.outcome}"
        if record.errors:
            text += "  " + style(record.errors[0], "red")
        elif (note := phase_note(record.data)) is not None:
            text += "  " + style(note, "dim")
        return text

    def finish(self) -> None:
        """The blank line between the live phases and the summary."""
        if self.live:
            self.console.print()


def _logged_note(data: Mapping[str, Any]) -> str | None:
    """What a built-in action wrote (``log_only``'s message, a notification), decided or run
    by an action of the loop (the first one that wrote), to show inline."""
    ran = data.get("actions")
    for entry in [data, *(ran if isinstance(ran, list) else ())]:
        for key in ("log", "notification", "escalation"):
            written = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(written, dict) and (
                text := written.get("message") or written.get("reason")
            ):
                return f"{key}: {text}"
    return None


def phase_note(data: Mapping[str, Any]) -> str | None:
    """What a phase's line says besides its outcome: the phase's own note (a dry run that
    would wait for approval), else what a built-in action wrote."""
    note = data.get("note")
    return note if isinstance(note, str) else _logged_note(data)
