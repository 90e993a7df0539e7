"""Live lines for what long skills report while they run (stages and tool calls of LLM chains)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopengine.commands._console import Console

if TYPE_CHECKING:
    from loopengine.skills import Progress

__all__ = ["live_progress", "progress_line"]


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
