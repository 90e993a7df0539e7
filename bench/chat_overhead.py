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
import multiprocessing
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


def _serve(runs: int, ready: Any, stop: Any) -> None:
    """The scripted server, in its own process so it does not share our interpreter lock."""
    with FakeLLMServer() as server:
        script: list[Any] = []
        for _ in range(runs * 2):
            script += [*(tool_call("noop", {"step": i}) for i in range(TURNS)), reply("done")]
        server.script("bench", script)
        server.script("raw", [reply("x")] * (runs * (TURNS + 1) + 50))
        ready.put(server.base_url)
        stop.wait()


async def _agent(base_url: str, runs: int, store: Store | None) -> tuple[float, list[bytes]]:
    """Seconds for ``runs`` stages of TURNS tool turns + an answer, and the bodies they sent."""
    node = Node.model_validate({"base_url": base_url, "model": "bench", "timeout_s": 30})
    toolbox = Toolbox([getattr(noop, ATTRIBUTE)])
    bodies: list[bytes] = []

    async def keep(request: httpx.Request) -> None:
        bodies.append(request.content)

    async with httpx.AsyncClient(event_hooks={"request": [keep]}) as http:
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
    return elapsed, bodies


async def _raw(base_url: str, bodies: list[bytes]) -> float:
    """Seconds for httpx alone to post exactly the bodies the chain sent."""
    url = base_url + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    raw = [
        body.replace(b'"model":"bench"', b'"model":"raw"').replace(
            b'"model": "bench"', b'"model": "raw"'
        )
        for body in bodies
    ]
    async with httpx.AsyncClient() as http:
        started = time.perf_counter()
        for body in raw:
            await http.post(url, content=body, headers=headers)
        return time.perf_counter() - started


async def main(runs: int, base_url: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain, bodies = await _agent(base_url, runs, None)
        store = await Store.open(f"sqlite:///{Path(tmp) / 'threads.db'}")
        try:
            persisted, _ = await _agent(base_url, runs, store)
        finally:
            await store.close()
        raw = await _raw(base_url, bodies)
    calls = len(bodies)
    per_raw = raw / calls * 1e6
    print(
        f"{runs} stages × {TURNS} tool turns + an answer = {calls} calls; server in its own process"
    )
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
            f"{label:32}{per_turn:8.1f} µs   overhead {overhead:7.1f} µs = {share:5.1f}%"
            f" (goal ≤ 20%: {verdict})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    child = context.Process(target=_serve, args=(runs, ready, stop), daemon=True)
    child.start()
    try:
        asyncio.run(main(runs, ready.get(timeout=30)))
    finally:
        stop.set()
        child.join(timeout=10)
