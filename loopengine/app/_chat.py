"""One message through the shipped ``reflexive_chat`` loop, answered as the chat response of
seed 000 §5: what ``loopengine chat`` and the daemon's chat endpoints share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from loopengine._json import JSONObject
from loopengine._resources import shipped_loop
from loopengine.app._runtime import Runtime, listening
from loopengine.contract import Loop, Outcome, input_problems
from loopengine.errors import ContractError, LoopEngineError
from loopengine.store import new_envelope

if TYPE_CHECKING:
    from loopengine.skills import Progress

__all__ = ["CHAT_LOOP", "ChatAnswer", "Mode", "chat", "chat_loop"]

CHAT_LOOP = "reflexive_chat"
Mode = Literal["simple", "reflexive"]
"""What the loop's ``mode`` input may force (it classifies the message when none is given)."""
_RESPONSE = ("reply", "mode", "turns", "session_id", "chain", "tools_used", "execution_id")


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The chat response's fields, how the execution ended and the tokens it spent."""

    reply: str
    mode: str | None
    turns: int
    session_id: str | None
    chain: list[JSONObject]
    tools_used: list[JSONObject]
    execution_id: str
    outcome: Outcome
    tokens: int

    def response(self) -> JSONObject:
        """The chat response: what ``loopengine chat --json`` prints and ``POST /chat`` returns."""
        return {name: getattr(self, name) for name in _RESPONSE}

    def why_no_reply(self) -> str:
        """Each stage's reason, for a chain that ended without a reply."""
        return "; ".join(f"{s['node']}: {s.get('reason') or s['status']}" for s in self.chain)


def chat_loop(runtime: Runtime) -> Loop:
    """The shipped chat loop, to run on ``runtime``; ``ContractError`` saying what is missing
    (the loop file, LLM nodes)."""
    path = shipped_loop(CHAT_LOOP)
    if path is None:
        raise ContractError(f"the shipped loop {CHAT_LOOP!r} is missing from this installation")
    if not runtime.workspace.config.cluster.nodes:
        raise ContractError("no LLM nodes configured: add cluster.nodes to loopengine.yaml")
    return runtime.load_loop(str(path))


async def chat(
    runtime: Runtime,
    loop: Loop,
    message: str,
    session: str | None = None,
    mode: Mode | None = None,
    progress: Progress | None = None,
    user: str | None = None,
    category: str | None = None,
) -> ChatAnswer:
    """Run ``message`` through ``loop`` (``chat_loop``) on ``runtime``'s engine, telling
    ``progress`` what the chain does, with ``user``'s memory, routed by ``category`` (else by
    its mode, else ``default``); ``ContractError`` when an input does not fit the loop's params,
    ``LoopEngineError`` when the execution kept no chat."""
    given = {
        "message": message,
        "session": session,
        "mode": mode,
        "user": user,
        "category": category,
    }
    inputs = {name: value for name, value in given.items() if value}
    if problems := input_problems(loop.spec.params or {}, inputs):
        raise ContractError(f"{loop.id}: {'; '.join(problems)}")
    with listening(progress):
        done = await runtime.engine.run(loop, envelope=new_envelope(loop.id, inputs))
    found = done.data.get("chat") if done.data is not None else None
    if not isinstance(found, dict):
        raise LoopEngineError(f"chat ended as {done.outcome}: {done.error or 'no reply'}")
    return ChatAnswer(
        reply=found.get("reply", ""),
        mode=found.get("mode"),
        turns=found.get("turns", 0),
        session_id=found.get("session_id"),
        chain=found.get("chain", []),
        tools_used=found.get("tools_used", []),
        execution_id=done.execution_id,
        outcome=done.outcome,
        tokens=done.tokens,
    )
