"""The daemon's HTTP API under 50 concurrent clients, and the HTTP layer's cost on a chat.

    python bench/api.py [--requests 2000] [--clients 50] [--rounds 3] [--chats 200]

Endpoints: ``GET /executions/{id}``, ``POST /events`` and ``POST /loops/{id}/trigger``, each
next to ``GET /health`` (the same server, token check and request log, no store: the floor of
uvicorn, FastAPI and the client on this machine), side by side round after round; requests/s and
p50/p99 latency, medians over the rounds. The daemon runs in its own process on SQLite with its
default durability; the clients are kept-alive connections of one process, written by hand
(``Connection``) so that the client is not what is measured.

Chat: ``POST /v1/chat/completions`` (model ``loopengine-simple``) next to the same message run
in-process as ``loopengine chat`` runs it (the shipped loop on a runtime, without the process
start), against one zero-latency scripted node; interleaved; the HTTP layer's overhead is the
difference of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from loopengine.testing import FakeLLMServer, reply

TOKEN = "bench-token-0123456789"
LOOPS = {
    "by_hand.yaml": """\
id: by_hand
trigger: {type: manual}
concurrency: {max: 4, on_overlap: queue, max_queue: 100000}
decide: {decision_tree: [], fallback_action: log_only}
""",
    "on_event.yaml": """\
id: on_event
trigger: {type: event, config: {event_pattern: "bench.*", filter: "data.n < `0`"}}
decide: {decision_tree: [], fallback_action: log_only}
""",
}


def _serve(count: int, ready: Any, stop: Any) -> None:
    """The scripted node, in its own process so that it does not share our interpreter lock."""
    with FakeLLMServer() as server:
        server.script("bench", [reply("pong")] * count)
        ready.put(server.base_url)
        stop.wait()


def _workspace(root: Path, base_url: str) -> dict[str, str]:
    (root / "loops").mkdir()
    for name, text in LOOPS.items():
        (root / "loops" / name).write_text(text)
    node = {"base_url": base_url, "model": "bench", "timeout_s": 30}
    config = {
        "daemon": {"port": 0},
        "cluster": {"nodes": {"OL1": node}, "routing": {"default": ["OL1"]}, "chain": ["OL1"]},
    }
    (root / "loopengine.yaml").write_text(json.dumps(config))
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}"}
    env["LOOPENGINE_API_TOKEN"] = TOKEN
    env.pop("LOOPENGINE_CONFIG", None)
    return env


def start_daemon(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """``loopengine daemon loops`` in ``root``, its JSON log in a file; its API URL once it is
    ready (it exiting, or not ready within a minute, ends the bench)."""
    log = root / "daemon.log"
    with log.open("w") as stream:
        process = subprocess.Popen(
            [sys.executable, "-m", "loopengine", "daemon", "loops", "--json"],
            cwd=root,
            env=env,
            stdout=stream,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text().splitlines():
            record = json.loads(line) if line.startswith("{") else {}
            if record.get("kind") == "ready":
                return process, str(record["api"])
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"the daemon did not start: {log.read_text()[-2000:]}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Connection:
    """One kept-alive HTTP/1.1 connection, written by hand so that the client costs little
    next to the server (httpx's async client tops out near 350 requests/s on this machine,
    below the server)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, api: str) -> Connection:
        host, port = api.removeprefix("http://").rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        payload = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        self.writer.write(head.encode() + payload)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in lines
            if line.lower().startswith(b"content-length:")
        )
        return int(lines[0].split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


Send = Callable[[Connection, int], Awaitable[tuple[int, bytes]]]


async def _load(api: str, send: Send, requests: int, clients: int) -> dict[str, float]:
    """``requests`` sent by ``clients`` concurrent connections: requests/s, p50 and p99 (ms)."""
    latencies: list[float] = []
    counter = iter(range(requests))
    connections = [await Connection.open(api) for _ in range(clients)]

    async def caller(connection: Connection) -> None:
        for n in counter:
            started = time.perf_counter()
            status, body = await send(connection, n)
            latencies.append((time.perf_counter() - started) * 1000)
            if status >= 400:
                raise SystemExit(f"{status} {body[:300]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(caller(connection) for connection in connections))
    elapsed = time.perf_counter() - started
    for connection in connections:
        connection.close()
    return {
        "rps": requests / elapsed,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
    }


def _endpoints(execution_id: str) -> dict[str, Send]:
    def get_execution(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("GET", f"/executions/{execution_id}")

    def post_event(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("POST", "/events", {"name": "bench.tick", "data": {"n": n}})

    def trigger(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("POST", "/loops/by_hand/trigger", {"inputs": {}})

    def health(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("GET", "/health")

    return {
        "GET /health (floor)": health,
        "GET /executions/{id}": get_execution,
        "POST /events": post_event,
        "POST /loops/{id}/trigger": trigger,
    }


async def _first_execution(api: str) -> str:
    connection = await Connection.open(api)
    await connection.request("POST", "/loops/by_hand/trigger", {"inputs": {}})
    while True:
        _, body = await connection.request("GET", "/executions?loop_id=by_hand&limit=1")
        listed = json.loads(body)["executions"]
        if listed and listed[0]["status"] == "finished":
            connection.close()
            return str(listed[0]["execution_id"])
        await asyncio.sleep(0.05)


async def _drained(api: str) -> None:
    """Once the jobs the triggers queued have run (they would load the next measurement)."""
    connection = await Connection.open(api)
    while True:
        _, body = await connection.request("GET", "/status")
        if not any(json.loads(body)["queue"].values()):
            connection.close()
            return
        await asyncio.sleep(0.2)


async def bench_endpoints(api: str, args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    sends = _endpoints(await _first_execution(api))
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sends}
    for _ in range(args.rounds):
        for name, send in sends.items():
            results[name].append(await _load(api, send, args.requests, args.clients))
        await _drained(api)
    return results


async def bench_chat(api: str, root: Path, chats: int) -> dict[str, list[float]]:
    """One chat message over HTTP and in-process, interleaved: each one's time (ms)."""
    from loopengine.app import chat, chat_loop, open_runtime

    times: dict[str, list[float]] = {"HTTP /v1/chat/completions": [], "in-process chat": []}
    request = {"model": "loopengine-simple", "messages": [{"role": "user", "content": "ping"}]}
    connection = await Connection.open(api)
    async with open_runtime(root / "loopengine.yaml") as runtime:
        loop = chat_loop(runtime)
        for _ in range(chats):
            started = time.perf_counter()
            status, body = await connection.request("POST", "/v1/chat/completions", request)
            times["HTTP /v1/chat/completions"].append((time.perf_counter() - started) * 1000)
            if status != 200:
                raise SystemExit(f"chat over HTTP: {status} {body[:300]!r}")
            started = time.perf_counter()
            await chat(runtime, loop, "ping", mode="simple")
            times["in-process chat"].append((time.perf_counter() - started) * 1000)
    connection.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chats", type=int, default=200)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    node = context.Process(target=_serve, args=(args.chats * 4 + 100, ready, stop), daemon=True)
    node.start()
    base_url = ready.get(timeout=30)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = _workspace(root, base_url)
        daemon, api = start_daemon(root, env)
        try:
            endpoints = asyncio.run(bench_endpoints(api, args))
            os.environ["LOOPENGINE_DATABASE"] = env["LOOPENGINE_DATABASE"]
            chat = asyncio.run(bench_chat(api, root, args.chats))
        finally:
            daemon.terminate()
            daemon.wait(60)
            stop.set()
    print(
        f"{args.clients} concurrent clients, {args.requests} requests a round, {args.rounds} rounds (medians)"
    )
    print(f"{'endpoint':<28}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for name, rounds in endpoints.items():
        figures = {key: statistics.median(r[key] for r in rounds) for key in ("rps", "p50", "p99")}
        print(f"{name:<28}{figures['rps']:>10.0f}{figures['p50']:>10.1f}{figures['p99']:>10.1f}")
    http, local = (statistics.median(values) for values in chat.values())
    print(
        f"\nchat, {args.chats} messages each (median ms): HTTP {http:.2f}, in-process {local:.2f}"
    )
    print(f"HTTP layer overhead: {http - local:+.2f} ms ({(http - local) / local:+.0%})")


if __name__ == "__main__":
    main()
