"""The chat chain's own cost per turn next to the raw HTTP round-trip, on a zero-latency server.

    python bench/chat_overhead.py [--runs 50] [--rounds 5] [--latency-ms 0] [--requests 200]

A turn is: the client's call, parsing the tool call, the anti-loop guard, running a no-op tool,
feeding the result back, and committing the round as one atomic thread batch through
``Conversation``, to SQLite in memory (first row) or on disk (``synchronous=FULL``, second row),
as ``loopengine chat`` does. The raw
round-trip is ``httpx`` posting the same requests to the same scripted server. The three are
measured in turn ``--rounds`` times and the median of each is kept. Goal: overhead ≤ 20% of it.
``--latency-ms`` makes the server think that long before each answer (a real model takes
seconds), which shows what the commit of a round costs once it overlaps the next call.
The per-message costs outside the turns (open the thread, commit the user's message and the
reply) are printed apart.

Last, what a user of the OpenAI-compatible endpoint feels: a simple-mode
``POST /v1/chat/completions`` through a daemon (a subprocess on 127.0.0.1 with its SQLite store,
whose one node is the scripted server) next to the same request sent straight to the node,
``--requests`` of each, interleaved; the medians and what the daemon adds (goal ≤ 5 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
from api import start_daemon

from loopengine.contract import Node
from loopengine.llm import ChatClient, Hooks, Toolbox, run_agent
from loopengine.skills import ATTRIBUTE, tool
from loopengine.store import Store
from loopengine.testing import FakeLLMServer, forever, reply, tool_call
from loopengine.threads import Conversation


@tool("noop")
async def noop(step: int) -> dict[str, int]:
    """Return at once."""
    return {"step": step}


TURNS = 6
ADDED_GOAL_MS = 5.0


def _serve(stages: int, latency_s: float, ready: Any, stop: Any) -> None:
    """The scripted server, in its own process so it does not share our interpreter lock."""
    with FakeLLMServer() as server:
        script: list[Any] = []
        for _ in range(stages):
            script += [*(tool_call("noop", {"step": i}) for i in range(TURNS)), reply("done")]
        server.script("bench", [replace(answer, delay_s=latency_s) for answer in script])
        raw = replace(reply("x"), delay_s=latency_s)
        server.script("raw", [raw] * (stages * (TURNS + 1) // 2 + 50))
        server.script("chat", forever(raw))
        ready.put(server.base_url)
        stop.wait()


@dataclass(slots=True)
class _Timing:
    turns: float = 0.0
    per_message: float = 0.0
    bodies: list[bytes] = field(default_factory=list)


async def _agent(base_url: str, runs: int, store: Store) -> _Timing:
    """``runs`` stages of TURNS tool turns + an answer: their time, the per-message commits' time,
    and the bodies they sent."""
    node = Node.model_validate({"base_url": base_url, "model": "bench", "timeout_s": 30})
    toolbox = Toolbox([getattr(noop, ATTRIBUTE)])
    timing = _Timing()

    async def keep(request: httpx.Request) -> None:
        timing.bodies.append(request.content)

    async with httpx.AsyncClient(event_hooks={"request": [keep]}) as http:
        client = ChatClient("bench", node, http)
        for _ in range(runs):
            started = time.perf_counter()
            conversation = await Conversation.open(store, uuid.uuid4().hex)
            await conversation.append([{"role": "user", "content": "go"}], uuid.uuid4().hex)
            asking = time.perf_counter()
            report = await run_agent(
                client,
                conversation.thread,
                toolbox,
                max_turns=TURNS + 1,
                hooks=Hooks(on_round=lambda r, c=conversation: c.commit(r, uuid.uuid4().hex)),
            )
            answered = time.perf_counter()
            assert report.status == "ok", report.reason
            reply_ = [{"role": "assistant", "content": report.reply}]
            await conversation.append(reply_, uuid.uuid4().hex)
            timing.turns += answered - asking
            timing.per_message += (asking - started) + (time.perf_counter() - answered)
    return timing


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


async def main(runs: int, rounds: int, base_url: str) -> None:
    plain: list[_Timing] = []
    persisted: list[_Timing] = []
    raw: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            Store.open("sqlite://") as memory,
            Store.open(f"sqlite:///{Path(tmp) / 'threads.db'}") as store,
        ):
            for _ in range(rounds):
                plain.append(await _agent(base_url, runs, memory))
                persisted.append(await _agent(base_url, runs, store))
                raw.append(await _raw(base_url, plain[-1].bodies))
    calls = len(plain[0].bodies)
    per_raw = statistics.median(raw) / calls * 1e6
    print(
        f"{runs} stages × {TURNS} tool turns + an answer = {calls} calls, median of {rounds};"
        " server in its own process"
    )
    print(f"raw httpx round-trip, same requests:  {per_raw:8.1f} µs per call")
    for label, timings in (
        ("chain turn, thread in memory", plain),
        ("chain turn, thread persisted", persisted),
    ):
        per_turn = statistics.median(t.turns for t in timings) / calls * 1e6
        overhead = per_turn - per_raw
        share = overhead / per_raw * 100
        verdict = "ok" if share <= 20 else "MISSED"
        print(
            f"{label:32}{per_turn:8.1f} µs   overhead {overhead:7.1f} µs = {share:5.1f}%"
            f" (goal ≤ 20%: {verdict})"
        )
    per_message = statistics.median(t.per_message for t in persisted) / runs * 1e3
    print(f"per message, outside the turns (open + user + reply commits): {per_message:.2f} ms")


def _timed_post(http: httpx.Client, url: str, body: dict[str, Any], times: list[float]) -> None:
    """Post ``body`` to ``url``, adding the milliseconds it took to ``times``."""
    started = time.perf_counter()
    answered = http.post(url, json=body)
    times.append((time.perf_counter() - started) * 1000)
    answered.raise_for_status()


def through_daemon(base_url: str, requests: int) -> None:
    """Interleaved simple-mode completions through a daemon and straight to its node."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "loops").mkdir()
        (root / "loopengine.yaml").write_text(
            "daemon: {host: 127.0.0.1, port: 0}\n"
            f"cluster:\n  nodes:\n    N1: {{base_url: '{base_url}', model: chat, timeout_s: 30}}\n"
            "autolearn: {explore: 0}\n"
        )
        env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}"}
        env.pop("LOOPENGINE_CONFIG", None)
        daemon, api = start_daemon(root, env)
        try:
            question = [{"role": "user", "content": "hi"}]
            through = {"model": "loopengine-simple", "messages": question}
            straight = {"model": "chat", "messages": question}
            daemon_ms: list[float] = []
            direct_ms: list[float] = []
            with httpx.Client(timeout=30) as http:
                for _ in range(max(requests // 10, 5)):
                    _timed_post(http, api + "/v1/chat/completions", through, [])
                    _timed_post(http, base_url + "/chat/completions", straight, [])
                for _ in range(requests):
                    _timed_post(http, api + "/v1/chat/completions", through, daemon_ms)
                    _timed_post(http, base_url + "/chat/completions", straight, direct_ms)
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
    direct, through_ms = statistics.median(direct_ms), statistics.median(daemon_ms)
    added = through_ms - direct
    verdict = "ok" if added <= ADDED_GOAL_MS else "MISSED"
    print(f"POST /v1/chat/completions, simple mode, {requests} of each interleaved (medians):")
    print(f"  straight to the node     {direct:7.2f} ms")
    print(f"  through the daemon       {through_ms:7.2f} ms")
    print(f"  added by the daemon      {added:7.2f} ms (goal ≤ {ADDED_GOAL_MS:g} ms: {verdict})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--requests", type=int, default=200)
    options = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    stages = options.runs * options.rounds * 2
    latency = options.latency_ms / 1000
    child = context.Process(target=_serve, args=(stages, latency, ready, stop), daemon=True)
    child.start()
    try:
        served = ready.get(timeout=30)
        asyncio.run(main(options.runs, options.rounds, served))
        through_daemon(served, options.requests)
    finally:
        stop.set()
        child.join(timeout=10)
