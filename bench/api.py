"""The daemon's HTTP API under 50 concurrent clients, next to a bare FastAPI app, and the HTTP
layer's cost on a chat.

    python bench/api.py [--requests 2000] [--clients 50] [--rounds 3] [--chats 200]

Endpoints: ``GET /health``, ``GET /executions/{id}``, ``POST /events`` and
``POST /loops/{id}/trigger``, each next to its floor: a bare FastAPI app whose endpoints do
nothing but answer, served by uvicorn as the daemon serves its API (the same server class,
protocol and settings, on an event loop of its own process). Like for like: the floor has a
route of the same method and path for each endpoint, is sent the very same requests (head and
body) and answers each with the status and JSON body the daemon answered it (captured from the
daemon first, checked of the same size). Both processes run in the same run; each endpoint and
its floor are measured in turn, round after round, by the same clients: kept-alive connections
of one process, written by hand (``Connection``) so that the client is not what is measured.
Printed: requests/s, p50/p99 latency, how many times slower than the floor, and the CPU time
each request cost the server (``/proc/PID/stat``, all its threads, the jobs a trigger starts
included; beside it, how many times the floor's: on a loaded machine a steadier figure than
requests/s) and the clients; medians over the rounds, and the load average at the start and
the end. A trigger's server CPU holds the jobs it queued that ran during the round: printed
apart, a request's without them (the CPU a job took measured as the jobs left drained). The
daemon runs on SQLite with its default durability.

Chat: ``POST /v1/chat/completions`` (model ``loopengine-simple``) next to the same message run
in-process as ``loopengine chat`` runs it (the shipped loop on a runtime, without the process
start), against one zero-latency scripted node; interleaved; the HTTP layer's overhead is the
difference of the medians. CPU a message (the mean: the daemon's is read in ticks of 10 ms): the
daemon's for the first, this process's for the second (the node's, in its own process, left out
of both). ``--chats 0`` leaves the chat out.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usage import cpu_seconds, load_average, percentile, spent

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


Answers = dict[str, tuple[int, Any]]
"""Each endpoint's name (``METHOD /route``) and what the daemon answered it: status, JSON body."""


def _answering(answer: Any) -> Callable[[], Awaitable[Any]]:
    async def nothing() -> Any:
        return answer

    return nothing


async def _serve_floor(answers: Answers) -> None:
    """The floor: a bare FastAPI app with a route for each endpoint that does nothing but give
    the daemon's answer (``answers``), served as the daemon serves its API; its URL printed once
    it accepts connections."""
    import anyio
    from fastapi import FastAPI

    from loopengine.api._server import ApiServer, listening_socket
    from loopengine.contract import DaemonSettings

    app = FastAPI()
    for name, (status, answer) in answers.items():
        method, route = name.split(" ", 1)
        app.add_api_route(route, _answering(answer), methods=[method], status_code=status)
    settings = DaemonSettings()
    server = ApiServer(app, listening_socket(settings.host, 0), settings)
    async with anyio.create_task_group() as group:
        group.start_soon(server.run_bound)
        while not server.started:
            await anyio.sleep(0.01)
        print(server.url, flush=True)


def start_floor(answers: Answers) -> tuple[subprocess.Popen[str], str]:
    """The floor's server, giving ``answers``, in its own process, and its URL."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--floor", json.dumps(answers)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url:
        process.kill()
        raise SystemExit("the bare FastAPI app did not start")
    return process, url


@dataclass(frozen=True)
class Server:
    """A server under load: its URL and its process (whose CPU time is read)."""

    api: str
    pid: int


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


async def _load(server: Server, send: Send, requests: int, clients: int) -> dict[str, float]:
    """``requests`` sent by ``clients`` concurrent connections: requests/s, p50 and p99 (ms),
    and the CPU time (ms) a request cost the server and the clients."""
    latencies: list[float] = []
    counter = iter(range(requests))
    connections = [await Connection.open(server.api) for _ in range(clients)]

    async def caller(connection: Connection) -> None:
        for n in counter:
            started = time.perf_counter()
            status, body = await send(connection, n)
            latencies.append((time.perf_counter() - started) * 1000)
            if status >= 400:
                raise SystemExit(f"{status} {body[:300]!r}")

    server_cpu = cpu_seconds(server.pid)
    with spent() as clients_spent:
        await asyncio.gather(*(caller(connection) for connection in connections))
    server_cpu = cpu_seconds(server.pid) - server_cpu
    for connection in connections:
        connection.close()
    return {
        "rps": requests / clients_spent.wall,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "server_ms": server_cpu * 1000 / requests,
        "client_ms": clients_spent.cpu * 1000 / requests,
    }


EVENT = "POST /events"
TRIGGER = "POST /loops/{id}/trigger"
WITHIN_FLOOR = 2.0
"""Goal (issue 26): ``POST /events`` and ``POST /loops/{id}/trigger`` within 2x of the floor."""


def _endpoints(execution_id: str) -> dict[str, Send]:
    """Each endpoint's request, by name (``METHOD /route``, the floor's route)."""

    def health(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("GET", "/health")

    def get_execution(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("GET", f"/executions/{execution_id}")

    def post_event(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("POST", "/events", {"name": "bench.tick", "data": {"n": n}})

    def trigger(connection: Connection, n: int) -> Awaitable[tuple[int, bytes]]:
        return connection.request("POST", "/loops/by_hand/trigger", {"inputs": {}})

    return {
        "GET /health": health,
        "GET /executions/{id}": get_execution,
        EVENT: post_event,
        TRIGGER: trigger,
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


async def _depth(api: str) -> int:
    """The jobs queued or running."""
    connection = await Connection.open(api)
    _, body = await connection.request("GET", "/status")
    connection.close()
    return sum(json.loads(body)["queue"].values())


async def _drained(api: str) -> None:
    """Once the jobs the triggers queued have run (they would load the next measurement)."""
    while await _depth(api):
        await asyncio.sleep(0.2)


async def _jobs_apart(daemon: Server, figures: dict[str, float], requests: int) -> None:
    """Adds to a trigger round's ``figures`` the server CPU (ms) a request cost without the jobs
    it queued (``request_ms``): the jobs that ran during the round (those queued less those
    left) at the CPU a job took as the ones left drained, taken from its ``server_ms``."""
    left = await _depth(daemon.api)
    before = cpu_seconds(daemon.pid)
    await _drained(daemon.api)
    each = (cpu_seconds(daemon.pid) - before) / left if left else 0.0
    figures["job_ms"] = each * 1000
    figures["request_ms"] = figures["server_ms"] - (requests - left) * each * 1000 / requests


async def _answers(api: str, sends: dict[str, Send]) -> dict[str, tuple[int, bytes]]:
    """What ``api`` answers each endpoint's request: status and body."""
    connection = await Connection.open(api)
    try:
        return {name: await send(connection, 0) for name, send in sends.items()}
    finally:
        connection.close()


def like_for_like(
    daemon: dict[str, tuple[int, bytes]], floor: dict[str, tuple[int, bytes]]
) -> None:
    """Ends the bench unless the floor answers each request with the daemon's status and a body
    of the same size (within a few bytes: an id or a count may take another digit)."""
    for name, (status, body) in daemon.items():
        floor_status, floor_body = floor[name]
        if floor_status != status or abs(len(floor_body) - len(body)) > 4:
            raise SystemExit(
                f"{name}: the floor answers {floor_status} with {len(floor_body)} bytes, the "
                f"daemon {status} with {len(body)} bytes: not like for like"
            )


Rounds = dict[str, list[tuple[dict[str, float], dict[str, float]]]]
"""Each endpoint's rounds: the daemon's figures and its floor's."""


async def bench_endpoints(
    daemon: Server, floor: Server, sends: dict[str, Send], args: argparse.Namespace
) -> Rounds:
    """Each endpoint and its floor in turn, ``args.rounds`` times; the jobs the triggers queued
    run out before the next measurement of the daemon."""
    results: Rounds = {name: [] for name in sends}
    for _ in range(args.rounds):
        for name, send in sends.items():
            floor_figures = await _load(floor, send, args.requests, args.clients)
            await _drained(daemon.api)
            daemon_figures = await _load(daemon, send, args.requests, args.clients)
            if name == TRIGGER:
                await _jobs_apart(daemon, daemon_figures, args.requests)
            results[name].append((daemon_figures, floor_figures))
    return results


HTTP_CHAT, LOCAL_CHAT = "HTTP /v1/chat/completions", "in-process chat"


async def bench_chat(
    daemon: Server, root: Path, chats: int
) -> dict[str, tuple[list[float], float]]:
    """One chat message over HTTP and in-process, interleaved: each one's time (ms), and the
    CPU time (ms) a message cost the daemon and this process."""
    from loopengine.app import chat, chat_loop, open_runtime

    times: dict[str, list[float]] = {HTTP_CHAT: [], LOCAL_CHAT: []}
    cpu = dict.fromkeys(times, 0.0)
    request = {"model": "loopengine-simple", "messages": [{"role": "user", "content": "ping"}]}
    connection = await Connection.open(daemon.api)
    async with open_runtime(root / "loopengine.yaml") as runtime:
        loop = chat_loop(runtime)
        for _ in range(chats):
            before = cpu_seconds(daemon.pid)
            with spent() as http:
                status, body = await connection.request("POST", "/v1/chat/completions", request)
            cpu[HTTP_CHAT] += cpu_seconds(daemon.pid) - before
            times[HTTP_CHAT].append(http.wall * 1000)
            if status != 200:
                raise SystemExit(f"chat over HTTP: {status} {body[:300]!r}")
            with spent() as local:
                await chat(runtime, loop, "ping", mode="simple")
            cpu[LOCAL_CHAT] += local.cpu
            times[LOCAL_CHAT].append(local.wall * 1000)
    connection.close()
    return {name: (times[name], cpu[name] * 1000 / chats) for name in times}


async def _against_floor(daemon: Server, args: argparse.Namespace) -> Rounds:
    """The endpoints' rounds next to a floor giving the daemon's answers (``like_for_like``)."""
    sends = _endpoints(await _first_execution(daemon.api))
    answers = await _answers(daemon.api, sends)
    floor_process, floor_api = start_floor(
        {name: (status, json.loads(body)) for name, (status, body) in answers.items()}
    )
    try:
        floor = Server(floor_api, floor_process.pid)
        like_for_like(answers, await _answers(floor.api, sends))
        return await bench_endpoints(daemon, floor, sends, args)
    finally:
        floor_process.terminate()
        floor_process.wait(60)


def _print_endpoints(endpoints: Rounds) -> None:
    def median(
        rounds: list[dict[str, float]],
        keys: tuple[str, ...] = ("rps", "p50", "p99", "server_ms", "client_ms"),
    ) -> dict[str, float]:
        return {key: statistics.median(r[key] for r in rounds) for key in keys}

    print(
        f"{'endpoint':<26}{'req/s':>7}{'floor':>7}{'below':>7}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'server CPU':>11}{'floor':>7}{'x floor':>8}{'client CPU':>11}  (CPU ms a request)"
    )
    below: dict[str, float] = {}
    for name, rounds in endpoints.items():
        f = median([daemon for daemon, _ in rounds])
        g = median([floor for _, floor in rounds])
        below[name] = g["rps"] / f["rps"]
        print(
            f"{name:<26}{f['rps']:>7.0f}{g['rps']:>7.0f}{below[name]:>6.1f}x{f['p50']:>8.1f}"
            f"{f['p99']:>8.1f}{f['server_ms']:>11.2f}{g['server_ms']:>7.2f}"
            f"{f['server_ms'] / g['server_ms']:>7.1f}x{f['client_ms']:>11.2f}"
        )
    trigger = median([daemon for daemon, _ in endpoints[TRIGGER]], ("request_ms", "job_ms"))
    floor_ms = median([floor for _, floor in endpoints[TRIGGER]])["server_ms"]
    print(
        f"{TRIGGER}: its server CPU holds the jobs it queued that ran during the round "
        f"({trigger['job_ms']:.2f} ms a job, as the others drained); a request alone "
        f"{trigger['request_ms']:.2f} ms, {trigger['request_ms'] / floor_ms:.1f}x the floor's"
    )
    verdicts = [
        f"{name} {below[name]:.1f}x: " + ("ok" if below[name] <= WITHIN_FLOOR else "MISSED")
        for name in (EVENT, TRIGGER)
    ]
    print(f"goal: within {WITHIN_FLOOR:g}x of the floor's req/s: " + "   ".join(verdicts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chats", type=int, default=200, help="0 leaves the chat out")
    parser.add_argument("--floor", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        asyncio.run(_serve_floor(json.loads(args.floor)))
        return
    started_load = load_average()
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    node = context.Process(target=_serve, args=(args.chats * 4 + 100, ready, stop), daemon=True)
    node.start()
    base_url = ready.get(timeout=30)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = _workspace(root, base_url)
        daemon_process, daemon_api = start_daemon(root, env)
        try:
            daemon = Server(daemon_api, daemon_process.pid)
            endpoints = asyncio.run(_against_floor(daemon, args))
            os.environ["LOOPENGINE_DATABASE"] = env["LOOPENGINE_DATABASE"]
            chat = asyncio.run(bench_chat(daemon, root, args.chats)) if args.chats > 0 else None
        finally:
            daemon_process.terminate()
            daemon_process.wait(60)
            stop.set()
    print(
        f"{args.clients} concurrent clients, {args.requests} requests a round, {args.rounds} "
        f"rounds (medians); {started_load} at the start, {load_average()} at the end"
    )
    _print_endpoints(endpoints)
    if chat is None:
        return
    (http, http_cpu), (local, local_cpu) = (
        (statistics.median(times), cpu) for times, cpu in chat.values()
    )
    print(
        f"\nchat, {args.chats} messages each (median ms): HTTP {http:.2f}, in-process {local:.2f}"
        f"; CPU a message (mean): the daemon {http_cpu:.2f} ms, in-process {local_cpu:.2f} ms"
    )
    print(f"HTTP layer overhead: {http - local:+.2f} ms ({(http - local) / local:+.0%})")


if __name__ == "__main__":
    main()
