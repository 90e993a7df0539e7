"""The chat chain's own cost per turn next to the raw HTTP round-trip, on a zero-latency server.

    python bench/chat_overhead.py [--runs 50]

A turn is: the client's call, parsing the tool call, the anti-loop guard, running a no-op tool,
feeding the result back, and (second row) persisting the round as one atomic thread batch in
SQLite (``synchronous=FULL``) and rebuilding the thread from the store, in one transaction. The raw round-trip is
``httpx`` posting the same request to the same scripted server. Goal: overhead ≤ 20% of it.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from loopengine.contract.config import Node
from loopengine.llm.agent import run_agent
from loopengine.llm.client import ChatClient
from loopengine.llm.threads import append_and_load
from loopengine.llm.tools import Toolbox
from loopengine.skills.definition import ATTRIBUTE, tool
from loopengine.store import Store
from loopengine.testing import FakeLLMServer, reply, tool_call


@tool("noop")
async def noop(step: int) -> dict[str, int]:
    """Return at once."""
    return {"step": step}


TURNS = 6


def _script(server: FakeLLMServer, runs: int) -> None:
    script = []
    for _ in range(runs):
        script += [*(tool_call("noop", {"step": i}) for i in range(TURNS)), reply("done")]
    server.script("bench", script)


async def _agent(
    server: FakeLLMServer, runs: int, store: Store | None
) -> tuple[float, list[dict[str, Any]]]:
    """Seconds for ``runs`` stages of TURNS tool turns + an answer, and the requests they sent."""
    node = Node.model_validate({"base_url": server.base_url, "model": "bench", "timeout_s": 30})
    toolbox = Toolbox([getattr(noop, ATTRIBUTE)])
    _script(server, runs)
    first = len(server.requests)
    async with httpx.AsyncClient() as http:
        client = ChatClient("bench", node, http)
        started = time.perf_counter()
        for _ in range(runs):
            session = uuid.uuid4().hex

            async def persist(
                messages: list[dict[str, Any]], session: str = session
            ) -> list[dict[str, Any]] | None:
                if store is None:
                    return None
                operation = uuid.uuid4().hex
                now = time.time()
                return await store.write(
                    lambda c: append_and_load(c, session, messages, operation_id=operation, now=now)
                )

            messages = [{"role": "user", "content": "go"}]
            report = await run_agent(
                client, messages, toolbox, max_turns=TURNS + 1, on_round=persist
            )
            assert report.status == "ok", report.reason
        elapsed = time.perf_counter() - started
    return elapsed, server.requests[first:]


async def _raw(server: FakeLLMServer, bodies: list[dict[str, Any]]) -> float:
    """Seconds for httpx alone to post exactly the requests the chain sent."""
    server.script("bench", [reply("x")] * (len(bodies) + 20))
    url = server.base_url + "/chat/completions"
    async with httpx.AsyncClient() as http:
        for body in bodies[:20]:
            await http.post(url, json=body)
        started = time.perf_counter()
        for body in bodies:
            await http.post(url, json=body)
        return time.perf_counter() - started


async def main(runs: int) -> None:
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        plain, bodies = await _agent(server, runs, None)
        store = await Store.open(f"sqlite:///{Path(tmp) / 'threads.db'}")
        try:
            persisted, _ = await _agent(server, runs, store)
        finally:
            await store.close()
        raw = await _raw(server, bodies)
    calls = len(bodies)
    per_raw = raw / calls * 1e6
    print(f"{runs} stages × {TURNS} tool turns + an answer = {calls} calls")
    print(f"raw httpx round-trip, same requests:  {per_raw:8.1f} µs per call")
    for label, total in (
        ("chain turn, no persistence", plain),
        ("chain turn, thread persisted", persisted),
    ):
        per_turn = total / calls * 1e6
        overhead = per_turn - per_raw
        share = overhead / per_raw * 100
        verdict = "ok" if share <= 20 else "MISSED"
        print(
            f"{label:32}{per_turn:8.1f} µs   overhead {overhead:7.1f} µs = {share:5.1f}% (goal ≤ 20%: {verdict})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(main(parser.parse_args().runs))
