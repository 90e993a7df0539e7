"""``loopengine history`` on a large store: ``list_executions`` with and without its indexes.

    python bench/history.py [--rows 50000] [--runs 300]

Builds SQLite stores (migrated, WAL, FULL sync) holding the same ``--rows`` executions: 20 loops
whose run rates differ by nearly three orders of magnitude (the busiest every ~8 minutes, the
quietest twice a week), outcomes mostly ``completed``/``nothing_detected`` with a tail of rare
ones, started over six months. Times ``list_executions`` (limit 20, median of ``--runs``) for
the four ``history`` variants and two hard cases of loop + outcome, each with its SQLite query
plan, on three schemas measured in the same run: with the indexes of migration 4; without the
(loop, outcome, started) one, to show why it is there; without any of them (schema version 3),
the anchor. Last, the write side: what the indexes add to an execution's insert and per-phase
updates (CPU in one transaction; a real commit adds its fsync).
Goal: every query < 5 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from loopengine.store import ExecutionRow, create_engine, migrate
from loopengine.store import _tables as tables
from loopengine.store.executions import insert_execution, list_executions, update_execution

GOAL_MS = 5.0
HISTORY_INDEXES = (
    "ix_executions_started",
    "ix_executions_outcome_started",
    "ix_executions_loop_outcome_started",
)
DAY = 86_400.0
SPAN = 182 * DAY
# loop id -> relative run rate: the busiest runs ~700x as often as the quietest.
LOOPS = {f"loop-{n:02d}": 700 / (n + 1) ** 2 for n in range(19)} | {"loop-19-quiet": 1.0}
OUTCOMES = {
    "completed": 600,
    "nothing_detected": 200,
    "no_action": 90,
    "failed": 40,
    "skipped": 30,
    "awaiting_approval": 10,
    "rejected": 5,
    "escalated": 5,
    "rolled_back": 3,
    "budget_exceeded": 3,
    "timed_out": 2,
    "interrupted": 1,
    "cancelled": 1,
}
SCHEMAS = {
    "with the history indexes (schema version 4)": (),
    "without ix_executions_loop_outcome_started": ("ix_executions_loop_outcome_started",),
    "anchor: without any of them (schema version 3)": HISTORY_INDEXES,
}
CASES: dict[str, dict[str, Any]] = {
    "history": {},
    "history LOOP": {"loop_id": "loop-00"},
    "history --outcome failed": {"outcome": "failed"},
    "history LOOP --outcome failed": {"loop_id": "loop-03", "outcome": "failed"},
    "  quiet loop, common outcome": {"loop_id": "loop-19-quiet", "outcome": "completed"},
    "  busy loop, rare outcome": {"loop_id": "loop-00", "outcome": "cancelled"},
}


def _row(rng: random.Random, started_at: float) -> dict[str, Any]:
    loop_id = rng.choices(list(LOOPS), list(LOOPS.values()))[0]
    outcome = rng.choices(list(OUTCOMES), list(OUTCOMES.values()))[0]
    return {
        "id": uuid.UUID(int=rng.getrandbits(128)).hex,
        "loop_id": loop_id,
        "loop_version": "3",
        "loop_file": f"loops/{loop_id}.yaml",
        "status": "waiting" if outcome == "awaiting_approval" else "finished",
        "outcome": outcome,
        "job_id": uuid.UUID(int=rng.getrandbits(128)).hex,
        "trigger_type": rng.choice(("cron", "cron", "webhook", "manual")),
        "trigger": {},
        "durability": "execution",
        "dry_run": False,
        "started_at": started_at,
        "completed_at": started_at + rng.uniform(0.05, 30.0),
        "last_phase": "store",
        "owner": "host:1234",
        "context": {"input": {"go": 1}, "detect": {"count": rng.randrange(50)}},
        "usage": {"tokens": rng.randrange(5_000), "cost": 0.0},
        "error": None,
    }


def _store(path: Path, rows: int, dropped: tuple[str, ...]) -> sa.Engine:
    """A migrated store with ``rows`` executions (the same rows for the same count)."""
    rng = random.Random(11)
    now = time.time()
    data = [_row(rng, now - rng.uniform(0, SPAN)) for _ in range(rows)]
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        migrate(connection)
        for name in dropped:
            connection.exec_driver_sql(f"DROP INDEX {name}")
        connection.execute(tables.executions.insert(), data)
    return engine


def _plan(connection: sa.Connection, filters: dict[str, Any]) -> str:
    """SQLite's plan for the SELECT ``list_executions`` runs (captured by SQLite's trace)."""
    statements: list[str] = []
    driver: Any = connection.connection.driver_connection
    driver.set_trace_callback(statements.append)
    try:
        list_executions(connection, **filters)
    finally:
        driver.set_trace_callback(None)
    [select] = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {select}")
    return "; ".join(row[3] for row in plan)


def _median_ms(call: Callable[[], object], runs: int) -> float:
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _read_side(engine: sa.Engine, runs: int) -> dict[str, tuple[float, str]]:
    results = {}
    with engine.connect() as connection, connection.begin():
        for label, filters in CASES.items():
            ms = _median_ms(partial(list_executions, connection, **filters), runs)
            results[label] = (ms, _plan(connection, filters))
    return results


def _write_us(engine: sa.Engine, executions: int = 300) -> float:
    """µs per execution written as ``durability: phase`` does: insert, 7 updates, the finish."""
    rng = random.Random(5)
    now = time.time()
    rows = [_row(rng, now + n) for n in range(executions)]
    progress = {"last_phase": "act", "context": rows[0]["context"], "usage": rows[0]["usage"]}
    with engine.connect() as connection, connection.begin():
        start = time.perf_counter()
        for row in rows:
            started = {**row, "status": "running", "outcome": None}
            insert_execution(connection, ExecutionRow.from_row(started))
            for _ in range(7):
                update_execution(connection, row["id"], **progress)
            update_execution(
                connection,
                row["id"],
                status="finished",
                outcome=row["outcome"],
                completed_at=row["completed_at"],
            )
        elapsed = time.perf_counter() - start
        connection.rollback()
    return elapsed / executions * 1e6


def _write_side(engines: list[sa.Engine], rounds: int = 21) -> list[float]:
    """Median µs per execution for each engine, in rounds that rotate which one goes first."""
    samples: list[list[float]] = [[] for _ in engines]
    for round_ in range(rounds):
        for n in range(len(engines)):
            which = (round_ + n) % len(engines)
            samples[which].append(_write_us(engines[which]))
    return [statistics.median(times) for times in samples]


def _print_reads(title: str, results: dict[str, tuple[float, str]]) -> None:
    print(f"\n{title}")
    for label, (ms, plan) in results.items():
        verdict = "ok" if ms < GOAL_MS else "OVER"
        print(f"  {label:32} {ms:7.3f} ms  (goal < {GOAL_MS:g} ms: {verdict})  {plan}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        engines = {
            title: _store(Path(folder) / f"{n}.db", args.rows, dropped)
            for n, (title, dropped) in enumerate(SCHEMAS.items())
        }
        try:
            first = next(iter(engines.values()))
            with first.connect() as connection:
                counts = connection.exec_driver_sql(
                    "SELECT loop_id, count(*) FROM executions GROUP BY loop_id ORDER BY 2 DESC"
                ).all()
            print(f"{args.rows} executions; per loop: {', '.join(f'{i} {n}' for i, n in counts)}")
            reads = {title: _read_side(engine, args.runs) for title, engine in engines.items()}
            writes = dict(zip(engines, _write_side(list(engines.values())), strict=True))
        finally:
            for engine in engines.values():
                engine.dispose()
    for title, results in reads.items():
        _print_reads(f"list_executions, limit 20, {title}:", results)
    print("\nwrite, one execution (insert + 7 phase updates + finish, in one transaction):")
    for title, us in writes.items():
        print(f"  {us:6.1f} µs  {title}")


if __name__ == "__main__":
    main()
