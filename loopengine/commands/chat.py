"""``loopengine chat "MESSAGE"``: one message through the shipped ``reflexive_chat`` loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine.app import Mode, chat, chat_loop, open_runtime
from loopengine.commands._console import Console
from loopengine.commands._progress import live_progress
from loopengine.contract import Outcome

__all__ = ["run_chat"]


def _badges(console: Console, chain: list[dict[str, Any]]) -> str:
    badges = []
    for stage in chain:
        if stage["status"] == "skipped":
            badges.append(console.style(f"[{stage['node']} skipped]", "dim"))
        else:
            turns = stage["turns"]
            badges.append(
                f"[{stage['node']} ▸ {turns} turn{'s' if turns != 1 else ''}, {stage['status']}]"
            )
    return " ".join(badges)


async def run_chat(
    console: Console,
    message: str,
    session: str | None,
    config: Path | None,
    as_json: bool,
    mode: Mode | None = None,
    user: str | None = None,
    *,
    category: str | None = None,
) -> int:
    """Print the reply with its chain (or the chat response with ``--json``); 1 unless the
    execution completed."""
    live = console.interactive and not as_json
    async with open_runtime(config) as runtime:
        progress = live_progress(console) if live else None
        loop = chat_loop(runtime)
        answer = await chat(
            runtime, loop, message, session, mode, progress=progress, user=user, category=category
        )
    if as_json:
        console.json(answer.response())
    elif not answer.reply:
        problem = f"no reply ({answer.why_no_reply()})"
        console.problem(f"{console.style('error:', 'red', 'bold')} {problem}")
    else:
        if live:
            console.print()
        console.print(answer.reply)
        turns = answer.turns
        summary = f"{answer.mode} · {turns} turn{'s' if turns != 1 else ''} · "
        console.print(console.style(summary, "dim") + _badges(console, answer.chain))
        console.print(console.style(f"session {answer.session_id}", "dim"))
    return 0 if answer.outcome is Outcome.COMPLETED else 1
