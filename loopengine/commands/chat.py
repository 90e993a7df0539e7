"""``loopengine chat "MESSAGE"``: one message through the shipped ``reflexive_chat`` loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from loopengine._resources import shipped_loop
from loopengine.commands._console import Console
from loopengine.commands._progress import live_progress
from loopengine.contract import Outcome
from loopengine.errors import ContractError, LoopEngineError
from loopengine.runtime import open_runtime
from loopengine.store import executions, new_envelope

__all__ = ["CHAT_LOOP", "run_chat"]

CHAT_LOOP = "reflexive_chat"


def _chat_of(connection: sa.Connection, execution_id: str) -> dict[str, Any]:
    row = executions.get_execution(connection, execution_id)
    chat = row.context.get("data", {}).get("chat") if row else None
    return chat if isinstance(chat, dict) else {}


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
) -> int:
    path = shipped_loop(CHAT_LOOP)
    if path is None:
        raise ContractError(f"the shipped loop {CHAT_LOOP!r} is missing from this installation")
    live = console.interactive and not as_json
    async with open_runtime(config, progress=live_progress(console) if live else None) as runtime:
        if not runtime.workspace.config.cluster.nodes:
            raise ContractError("no LLM nodes configured: add cluster.nodes to loopengine.yaml")
        loop = runtime.load_loop(str(path))
        inputs = {"message": message, **({"session": session} if session else {})}
        done = await runtime.engine.run(loop, envelope=new_envelope(loop.id, inputs))
        chat = await runtime.store.read(lambda c: _chat_of(c, done.execution_id))
    if not chat:
        raise LoopEngineError(f"chat ended as {done.outcome}: {done.error or 'no reply'}")
    response = {
        "reply": chat.get("reply", ""),
        "mode": chat.get("mode"),
        "turns": chat.get("turns", 0),
        "session_id": chat.get("session_id"),
        "chain": chat.get("chain", []),
        "tools_used": chat.get("tools_used", []),
        "execution_id": done.execution_id,
    }
    if as_json:
        console.json(response)
    elif not response["reply"]:
        reasons = "; ".join(
            f"{s['node']}: {s.get('reason') or s['status']}" for s in response["chain"]
        )
        console.problem(f"{console.style('error:', 'red', 'bold')} no reply ({reasons})")
    else:
        if live:
            console.print()
        console.print(str(response["reply"]))
        turns = response["turns"]
        summary = f"{response['mode']} · {turns} turn{'s' if turns != 1 else ''} · "
        console.print(console.style(summary, "dim") + _badges(console, response["chain"]))
        console.print(console.style(f"session {response['session_id']}", "dim"))
    return 0 if done.outcome is Outcome.COMPLETED else 1
