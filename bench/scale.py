"""Executions per second as daemons are added on one PostgreSQL, next to the claim floor.

    python bench/scale.py [--rounds 5] [--jobs 2000] [--quick]

A private PostgreSQL server with fsync on, and a SQLite file. Each round, on a fresh database:
``--jobs`` manual jobs of a trivial loop (``durability: phase``) are queued in one transaction
(waking the daemons as loopengine's queueing does) while 1, 2 then 3 real ``loopengine daemon``
processes (4 workers each) wait on PostgreSQL, and 1 daemon on SQLite; timed from that commit
to the last job's end as the jobs table records it. Printed for each: executions/s, daemon CPU per execution (``/proc``, all its threads) and
PostgreSQL CPU per execution (the server's processes, the backends that exited included, less
what queueing the jobs cost it: the floor's jobs are queued before it is timed). The floor, in
the same rounds: a Python loop on ``--floor-connections`` connections, each claiming
the oldest queued job (``FOR UPDATE SKIP LOCKED``) and setting it done, one job a transaction.

Then the backlog: the drain rate of the first ``--jobs`` executions with 10 times as many
queued, against the rate with ``--jobs`` queued (goal: within 10 %, both databases), and the
claim (``bench/claim.py``, a daemon serving 1,000 loops) behind 1,000,000 finished jobs
against none (goal: no slower). Medians of ``--rounds`` (``--quick``: 1 round, 100,000 finished
jobs); the load average is printed, figures taken on a loaded machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from claim import _rows, measure
from usage import CLOCK_TICKS, cpu_seconds, load_average

from loopengine.store import _tables as tables
from loopengine.store import create_engine, migrate, queue, wakeups

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' private server
from tests.postgres import PostgresServer, postgres_cluster

LOOP = """\
id: loop0
trigger: {type: manual}
durability: phase
concurrency: {max: 64}
decide: {decision_tree: [], fallback_action: log_only}
"""
SETUPS = (("PostgreSQL", 1), ("PostgreSQL", 2), ("PostgreSQL", 3), ("SQLite", 1))
GOAL_SHARE, GOAL_CPU_MS = 0.5, 1.5


@dataclass(frozen=True, slots=True)
class Drained:
    """One drain: executions/s, and CPU milliseconds per execution of the daemons (or the
    floor's process) and of PostgreSQL (None on SQLite)."""

    rate: float
    worker_ms: float
    server_ms: float | None


class Server:
    """The private PostgreSQL server: fresh databases, and the CPU its processes used."""

    def __init__(self, server: PostgresServer) -> None:
        self.server = server
        self.admin = create_engine(server.url)
        self.made = 0
        pidfile = server.home / "data" / "postmaster.pid"
        self.postmaster = int(pidfile.read_text().split()[0])

    def database(self) -> str:
        self.made += 1
        with self.admin.connect() as connection:
            autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
            autocommit.exec_driver_sql(f"CREATE DATABASE scale{self.made}")
        return f"{self.server.url.rsplit('/', 1)[0]}/scale{self.made}"

    def cpu(self) -> float:
        """CPU seconds of the postmaster, its exited children and its live ones."""
        total = _stat_seconds(self.postmaster, with_children=True)
        for child in _children(self.postmaster):
            total += _stat_seconds(child, with_children=False)
        return total


def _stat_seconds(pid: int, with_children: bool) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    used = int(fields[11]) + int(fields[12])
    if with_children:
        used += int(fields[13]) + int(fields[14])
    return used / CLOCK_TICKS


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        found.extend(int(child) for child in children)
    return found


def _queue_jobs(url: str, count: int) -> tuple[float, float]:
    """Queue ``count`` jobs of ``loop0`` in one transaction, which wakes the daemons as
    loopengine's own queueing does (``NOTIFY`` on PostgreSQL): the time it committed, and the
    CPU seconds PostgreSQL's backend spent on it (0 on SQLite), which no drain is charged for."""
    engine = create_engine(url)
    with engine.begin() as connection:
        for batch in _rows(count, 0, 1):
            connection.execute(tables.envelopes.insert(), [envelope for envelope, _ in batch])
            connection.execute(tables.jobs.insert(), [job for _, job in batch])
        wakeups.notify(connection, wakeups.JOB)
        backend = _backend(connection)
    committed = time.time()
    spent = _stat_seconds(backend, with_children=False) if backend else 0.0
    engine.dispose()
    if backend:
        _reaped(backend)
    return committed, spent


def _reaped(pid: int) -> None:
    """Once the server reaped its backend ``pid``: its CPU is then in the server's, where a
    measure started before or after it is sure to find it, or not."""
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def _backend(connection: sa.Connection) -> int | None:
    if connection.dialect.name != "postgresql":
        return None
    return int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _migrated(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        migrate(connection)
    engine.dispose()


def _ended(url: str, count: int) -> float:
    """When the ``count``-th job ended, once it has (polled: the jobs table, or the history the
    daemons sweep ended jobs to, says when)."""
    engine = create_engine(url)
    ended = sa.union_all(
        *(
            sa.select(table.c.finished_at).where(table.c.status == queue.DONE)
            for table in (tables.jobs, tables.job_history)
        )
    ).subquery()
    query = sa.select(ended.c.finished_at).order_by(ended.c.finished_at).offset(count - 1).limit(1)
    deadline = time.monotonic() + 60 + count / 10
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                found = connection.execute(query).scalar()
            if found is not None:
                return float(found)
            time.sleep(0.2)
    finally:
        engine.dispose()
    raise SystemExit(f"{count} jobs did not end in time")


@contextmanager
def _daemons(root: Path, url: str, count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` daemons on ``url`` serving the loop, once each is ready; stopped afterwards."""
    env = {**os.environ, "LOOPENGINE_DATABASE": url}
    env.pop("LOOPENGINE_CONFIG", None)
    started: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(count):
            log = root / f"daemon{index}.log"
            with log.open("w") as stream:
                started.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "loopengine", "daemon", "loops", "--json"],
                        cwd=root,
                        env=env,
                        stdout=stream,
                        stderr=subprocess.STDOUT,
                    )
                )
            _wait_ready(started[-1], log)
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text().splitlines():
            if line.startswith("{") and json.loads(line).get("kind") == "ready":
                return
        time.sleep(0.05)
    raise SystemExit(f"a daemon did not start: {log.read_text()[-2000:]}")


def drain(
    root: Path, url: str, daemons: int, queued: int, measured: int, server: Server | None
) -> Drained:
    """``daemons`` daemons draining ``queued`` jobs, the first ``measured`` of them timed."""
    _migrated(url)
    with _daemons(root, url, daemons) as processes:
        spent = sum(cpu_seconds(process.pid) for process in processes)
        served = server.cpu() if server else 0.0
        committed, queueing = _queue_jobs(url, queued)
        last = _ended(url, measured)
        spent = sum(cpu_seconds(process.pid) for process in processes) - spent
        served = server.cpu() - served - queueing if server else 0.0
    return Drained(
        measured / (last - committed),
        spent * 1000 / measured,
        served * 1000 / measured if server else None,
    )


def _floor_worker(engine: sa.Engine, done: list[int]) -> None:
    pick = (
        sa.select(tables.jobs.c.id)
        .where(tables.jobs.c.status == queue.QUEUED)
        .order_by(tables.jobs.c.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    finished = 0
    with engine.connect() as connection:
        while True:
            with connection.begin():
                job_id = connection.execute(pick).scalar()
                if job_id is None:
                    break
                connection.execute(
                    tables.jobs.update()
                    .where(tables.jobs.c.id == job_id)
                    .values(status=queue.DONE, finished_at=time.time())
                )
            finished += 1
    done.append(finished)


def floor(url: str, jobs: int, connections: int, server: Server) -> Drained:
    """The claim floor: ``connections`` threads, one connection each, claiming and ending
    the ``jobs`` queued, one job a transaction. Its connections close once PostgreSQL's CPU
    was read (a backend that exited is counted only once the server reaped it)."""
    _migrated(url)
    _queue_jobs(url, jobs)
    done: list[int] = []
    engines = [create_engine(url) for _ in range(connections)]
    threads = [threading.Thread(target=_floor_worker, args=(engine, done)) for engine in engines]
    served, wall, cpu = server.cpu(), time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    served = server.cpu() - served
    for engine in engines:
        engine.dispose()
    assert sum(done) == jobs, done
    return Drained(jobs / wall, cpu * 1000 / jobs, served * 1000 / jobs)


def _median(found: list[Drained]) -> Drained:
    rate = statistics.median(drained.rate for drained in found)
    worker = statistics.median(drained.worker_ms for drained in found)
    served = [drained.server_ms for drained in found if drained.server_ms is not None]
    return Drained(rate, worker, statistics.median(served) if served else None)


def _row(name: str, drained: Drained, floor_rate: float) -> str:
    server = "—" if drained.server_ms is None else f"{drained.server_ms:.2f} ms"
    return (
        f"  {name:<34} {drained.rate:>9,.0f} {drained.rate / floor_rate:>7.0%}"
        f" {drained.worker_ms:>9.2f} ms {server:>10}"
    )


def throughput(
    server: Server, folder: Path, rounds: int, jobs: int, connections: int
) -> dict[str, Drained]:
    """Each setup and the floor, ``rounds`` times in turn; their medians."""
    found: dict[str, list[Drained]] = {}
    for index in range(rounds):
        for database, daemons in SETUPS:
            url = server.database() if database == "PostgreSQL" else _sqlite(folder)
            watched = server if database == "PostgreSQL" else None
            drained = drain(folder, url, daemons, jobs, jobs, watched)
            found.setdefault(f"{daemons} daemon(s), {database}", []).append(drained)
        drained = floor(server.database(), jobs, connections, server)
        found.setdefault("floor", []).append(drained)
        print(f"  round {index + 1}/{rounds} done; {load_average()}", file=sys.stderr)
    return {name: _median(values) for name, values in found.items()}


def backlog(server: Server, folder: Path, rounds: int, jobs: int) -> None:
    """The drain rate of the first ``jobs`` executions with 10 × ``jobs`` queued, against
    ``jobs`` queued, 1 daemon on each database."""
    print(f"\nBacklog: executions/s of the first {jobs:,} jobs, 1 daemon; medians of {rounds}")
    print(f"  {'database':<11} {jobs:>9,} {jobs * 10:>9,} {'change':>7}")
    for database in ("PostgreSQL", "SQLite"):
        rates: dict[int, list[float]] = {jobs: [], jobs * 10: []}
        for _ in range(rounds):
            for queued, found in rates.items():
                url = server.database() if database == "PostgreSQL" else _sqlite(folder)
                found.append(drain(folder, url, 1, queued, jobs, None).rate)
        small, large = (statistics.median(rates[queued]) for queued in (jobs, jobs * 10))
        print(f"  {database:<11} {small:>9,.0f} {large:>9,.0f} {large / small - 1:>+7.0%}")


def _sqlite(folder: Path) -> str:
    path = folder / f"store{time.monotonic_ns()}.db"
    return f"sqlite:///{path}"


def history(server: Server, folder: Path, finished: int) -> None:
    """``bench/claim.py``'s claim with ``finished`` jobs in history against none."""
    print()
    queues = ((2_000, 0), (2_000, finished))
    measure("SQLite (file, FULL sync)", (_sqlite(folder) for _ in queues), 1000, 200, queues)
    measure("PostgreSQL (fsync on)", (server.database() for _ in queues), 1000, 200, queues)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--floor-connections", type=int, default=4)
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="1 round, 100,000 finished jobs")
    options = parser.parse_args()
    rounds = 1 if options.quick else options.rounds
    finished = 100_000 if options.quick else options.finished
    print(f"{load_average()} at the start")
    with tempfile.TemporaryDirectory() as folder, postgres_cluster(fsync=True) as cluster:
        root = Path(folder)
        (root / "loops").mkdir()
        (root / "loops" / "loop0.yaml").write_text(LOOP)
        (root / "loopengine.yaml").write_text("daemon: {port: 0, workers: 4}\n")
        server = Server(cluster)
        try:
            found = throughput(server, root, rounds, options.jobs, options.floor_connections)
            bottom = found.pop("floor")
            print(
                f"\n{options.jobs:,} queued manual jobs of a trivial loop, durability: phase,"
                f" PostgreSQL fsync on; medians of {rounds} round(s)"
            )
            print(
                f"  {'':<34} {'exec/s':>9} {'floor':>7} {'daemon CPU':>12} {'PG CPU':>10}"
                "   (CPU per execution)"
            )
            for name, drained in found.items():
                print(_row(name, drained, bottom.rate))
            connections = options.floor_connections
            print(_row(f"floor, {connections} connections", bottom, bottom.rate))
            print(
                f"  goals: 3 daemons ≥ {GOAL_SHARE:.0%} of the floor, daemon CPU ≤"
                f" {GOAL_CPU_MS} ms per execution"
            )
            backlog(server, root, rounds, options.jobs)
            history(server, root, finished)
        finally:
            server.admin.dispose()
    print(f"\n{load_average()} at the end")


if __name__ == "__main__":
    main()
