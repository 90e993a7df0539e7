"""A daemon's claim of its next job as the queue grows, next to the floor: the bare query.

    python bench/claim.py [--loops 1000] [--claims 200] [--no-postgres]

For each database (a SQLite file, and a private PostgreSQL server when its binaries are found)
and each queue (2,000 then 20,000 jobs queued; 2,000 queued behind 200,000 finished), times
``queue.claim_next`` for a daemon serving ``--loops`` loops (their jobs spread evenly), each
claim followed by its job's finish in one transaction, as a worker does; medians of
``--claims``. The floor, timed in turn on the same rows: the oldest queued job read through the
(status, created_at) index, its row locked (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), and its
status set, with nothing else. Finished jobs are where the daemons' sweep leaves them, in the
jobs' history (``store.history``). Goal: the claim at 20,000 queued, and behind 200,000
finished, within 10 % of the claim at 2,000, on both databases.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from loopengine.store import _tables as tables
from loopengine.store import create_engine, history, migrate, queue

QUEUES = ((2_000, 0), (20_000, 0), (2_000, 200_000))
"""(queued, finished) jobs."""
_BATCH = 5_000


def _rows(
    queued: int, finished: int, loops: int
) -> Iterator[tuple[tuple[dict[str, Any], dict[str, Any]], ...]]:
    """Envelope and job rows, finished ones first (older), in batches."""
    now = time.time()
    batch: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for index in range(queued + finished):
        job_id, done = uuid.uuid4().hex, index < finished
        created = now - 3600 + index * 1e-4
        envelope = {
            "job_id": job_id,
            "trace_id": job_id,
            "intent": "bench",
            "scope": {},
            "payload": {},
            "constraints": {},
            "idempotency_key": job_id,
            "execution_id": None,
            "trigger": {"type": "manual"},
            "created_at": created,
        }
        job = {
            "id": job_id,
            "loop_id": f"loop{index % loops}",
            "status": queue.DONE if done else queue.QUEUED,
            "reason": None,
            "not_before": created,
            "owner": None,
            "lease_until": None,
            "attempts": 0,
            "cancel_requested": False,
            "execution_id": None,
            "outcome": "completed" if done else None,
            "created_at": created,
            "finished_at": created if done else None,
        }
        batch.append((envelope, job))
        if len(batch) == _BATCH:
            yield tuple(batch)
            batch = []
    if batch:
        yield tuple(batch)


def _kept_in(job: dict[str, Any]) -> sa.Table:
    """Where the daemons' sweep leaves ``job``: its history once it ended."""
    return tables.job_history if job["status"] in history.ENDED else tables.jobs


def fill(engine: sa.Engine, queued: int, finished: int, loops: int) -> None:
    with engine.begin() as connection:
        migrate(connection)
        for batch in _rows(queued, finished, loops):
            connection.execute(tables.envelopes.insert(), [envelope for envelope, _ in batch])
            for table in (tables.jobs, tables.job_history):
                rows = [job for _, job in batch if _kept_in(job) is table]
                if rows:
                    connection.execute(table.insert(), rows)
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")


def claim(connection: sa.Connection, limits: dict[str, int]) -> None:
    found = queue.claim_next(connection, limits, "bench", time.time, 30.0)
    assert found is not None
    queue.finish_job(connection, found[1], outcome="completed", execution_id=None, now=time.time())


_FLOOR = (
    sa.select(tables.jobs.c.id)
    .where(tables.jobs.c.status == queue.QUEUED)
    .order_by(tables.jobs.c.created_at)
    .limit(1)
    .with_for_update(skip_locked=True)
)


def floor(connection: sa.Connection, limits: dict[str, int]) -> None:
    job_id = connection.execute(_FLOOR).scalar_one()
    done = tables.jobs.update().where(tables.jobs.c.id == job_id).values(status=queue.DONE)
    connection.execute(done)


def timed(
    engine: sa.Engine, step: Callable[[sa.Connection, dict[str, int]], None], loops: int
) -> float:
    """Milliseconds of one ``step`` in its transaction (the commit excluded)."""
    limits = {f"loop{index}": 10 for index in range(loops)}
    with engine.begin() as connection:
        started = time.perf_counter()
        step(connection, limits)
        return (time.perf_counter() - started) * 1000


def measure(
    name: str,
    urls: Iterator[str],
    loops: int,
    claims: int,
    queues: tuple[tuple[int, int], ...] = QUEUES,
) -> None:
    """Print the claim's and the floor's medians for each of ``queues`` (queued, finished), a
    fresh database of ``urls`` each. The databases are filled first, then claimed from in turn,
    a claim and a floor each, so a change of the machine's load weighs on every queue alike."""
    print(f"{name}: {loops} loops served; medians of {claims} claims, ms")
    print(f"  {'queued':>7} {'finished':>9} {'claim':>8} {'floor':>8} {'ratio':>6}")
    engines = [create_engine(next(urls)) for _ in queues]
    for engine, (queued, finished) in zip(engines, queues, strict=True):
        fill(engine, queued, finished, loops)
    sides: list[dict[str, list[float]]] = [{"claim": [], "floor": []} for _ in queues]
    for _ in range(claims // 2):
        for engine, timings in zip(engines, sides, strict=True):
            timings["claim"].append(timed(engine, claim, loops))
            timings["floor"].append(timed(engine, floor, loops))
    for engine in engines:
        engine.dispose()
    base: float | None = None
    for (queued, finished), timings in zip(queues, sides, strict=True):
        took, bare = (statistics.median(timings[side]) for side in ("claim", "floor"))
        base = base or took
        print(
            f"  {queued:>7,} {finished:>9,} {took:>8.3f} {bare:>8.3f} {took / bare:>5.1f}×"
            f"   ({took / base - 1:+.0%} against 2,000 queued)"
        )


@contextmanager
def _postgres() -> Iterator[Iterator[str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' private server
    from tests.postgres import postgres_server

    with postgres_server() as url:
        admin = create_engine(url)

        def databases() -> Iterator[str]:
            for index in range(len(QUEUES)):
                with admin.connect() as connection:
                    autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
                    autocommit.exec_driver_sql(f"CREATE DATABASE claims{index}")
                yield f"{url.rsplit('/', 1)[0]}/claims{index}"

        try:
            yield databases()
        finally:
            admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=1000)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        files = (f"sqlite:///{Path(folder) / f'claims{index}.db'}" for index in range(len(QUEUES)))
        measure("SQLite (file, FULL sync)", files, options.loops, options.claims)
    if not options.no_postgres:
        with _postgres() as databases:
            measure("PostgreSQL", databases, options.loops, options.claims)


if __name__ == "__main__":
    main()
