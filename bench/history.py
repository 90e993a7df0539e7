"""``loopengine history`` on a large store: ``list_executions`` with and without its indexes, and
the command itself.

Builds SQLite stores (migrated, WAL, FULL sync) holding the same ``--rows`` executions: 20 loops
whose run rates differ by nearly three orders of magnitude (the busiest every ~8 minutes, the
quietest twice a week), outcomes mostly ``completed``/``nothing_detected`` with a tail of rare
ones, started over six months. Times ``list_executions`` (limit 20, median of ``--runs``) for
the four ``history`` variants and two hard cases of loop + outcome, each with its SQLite query
plan, on three schemas measured in the same run: with the indexes of migration 4; without the
(loop, outcome, started) one, to show why it is there; without any of them (schema version 3),
the anchor. Last, the write side: what the indexes add to an execution's insert and per-phase
updates (in one transaction; a real commit adds its fsync). Each in-process figure is given in
wall and CPU time.

Then the command as a user runs it: ``loopengine history`` (the four variants, a fresh process
each, ``--config`` naming the store) on the store with the indexes and on the anchor store, next
to ``python -c "import sqlalchemy"`` (the floor of every command that opens the store), round by
round; medians of ``--commands`` processes in wall and CPU time (``wait4``), and each over the
floor.
Goal: every query < 5 ms.

    python bench/history.py [--rows 50000] [--runs 300] [--commands 11]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from usage import load_average
from validate_folder import Case, Sample, loopengine_command, run_rounds

from loopengine.store import ExecutionRow, create_engine, migrate
from loopengine.store import _tables as tables
from loopengine.store.executions import insert_execution, list_executions, update_execution

GOAL_MS = 5.0
FLOOR = 'floor: python -c "import sqlalchemy"'
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


def _median_ms(call: Callable[[], object], runs: int) -> tuple[float, float]:
    """The median wall and CPU time of ``runs`` calls (ms), after one to warm up."""
    call()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def _read_side(engine: sa.Engine, runs: int) -> dict[str, tuple[float, float, str]]:
    results = {}
    with engine.connect() as connection, connection.begin():
        for label, filters in CASES.items():
            wall, cpu = _median_ms(partial(list_executions, connection, **filters), runs)
            results[label] = (wall, cpu, _plan(connection, filters))
    return results


def _write_us(engine: sa.Engine, executions: int = 300) -> tuple[float, float]:
    """µs per execution written as ``durability: phase`` does: insert, 7 updates, the finish."""
    rng = random.Random(5)
    now = time.time()
    rows = [_row(rng, now + n) for n in range(executions)]
    progress = {"last_phase": "act", "context": rows[0]["context"], "usage": rows[0]["usage"]}
    with engine.connect() as connection, connection.begin():
        wall, cpu = time.perf_counter(), time.process_time()
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
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        connection.rollback()
    return wall / executions * 1e6, cpu / executions * 1e6


def _write_side(engines: list[sa.Engine], rounds: int = 21) -> list[tuple[float, float]]:
    """Median µs per execution for each engine, wall and CPU, in rounds that rotate which one
    goes first."""
    samples: list[list[tuple[float, float]]] = [[] for _ in engines]
    for round_ in range(rounds):
        for n in range(len(engines)):
            which = (round_ + n) % len(engines)
            samples[which].append(_write_us(engines[which]))
    return [
        (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
        for times in samples
    ]


def _print_reads(title: str, results: dict[str, tuple[float, float, str]]) -> None:
    print(f"\n{title}")
    for label, (wall, cpu, plan) in results.items():
        verdict = "ok" if wall < GOAL_MS else "OVER"
        print(
            f"  {label:32} {wall:7.3f} ms, CPU {cpu:7.3f} ms  (goal < {GOAL_MS:g} ms: {verdict})  "
            f"{plan}"
        )


def _command_cases(folder: Path, stores: dict[str, Path]) -> list[Case]:
    """``loopengine history``'s four variants on each of ``stores`` (by title), after the floor."""
    history = [*loopengine_command(), "history"]
    cases = [Case(FLOOR, [sys.executable, "-c", "import sqlalchemy"], folder)]
    for title, database in stores.items():
        config = folder / f"{database.stem}.yaml"
        config.write_text(f"database: sqlite:///{database}\n")
        for label, filters in list(CASES.items())[:4]:
            argv = [filters["loop_id"]] if "loop_id" in filters else []
            argv += ["--outcome", filters["outcome"]] if "outcome" in filters else []
            command = [*history, *argv, "--config", str(config)]
            cases.append(Case(f"{label}, {title}", command, folder))
    return cases


def _print_commands(samples: dict[str, list[Sample]], runs: int) -> None:
    print(f"\nthe command, medians of {runs} fresh processes, run round by round:")
    floor = samples[FLOOR]
    width = max(len(label) for label in samples)
    for label, found in samples.items():
        wall = statistics.median(s.seconds for s in found)
        cpu = statistics.median(s.cpu_seconds for s in found)
        pairs = list(zip(found, floor, strict=True))
        wall_over = statistics.median(a.seconds - b.seconds for a, b in pairs)
        cpu_over = statistics.median(a.cpu_seconds - b.cpu_seconds for a, b in pairs)
        over = f"   over the floor: wall {wall_over:+.3f} s, CPU {cpu_over:+.3f} s"
        over = "" if label == FLOOR else over
        print(f"  {label:<{width}}  wall {wall:6.3f} s   CPU {cpu:6.3f} s{over}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--commands", type=int, default=11, help="fresh processes per command")
    args = parser.parse_args()
    started_load = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = {title: folder / f"{n}.db" for n, title in enumerate(SCHEMAS)}
        engines = {
            title: _store(paths[title], args.rows, dropped) for title, dropped in SCHEMAS.items()
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
        indexed, *_, anchor = SCHEMAS
        timed = {"schema 4": paths[indexed], "anchor, schema 3": paths[anchor]}
        commands = run_rounds(_command_cases(folder, timed), args.commands)
    print(f"{started_load} at the start, {load_average()} at the end")
    for title, results in reads.items():
        _print_reads(f"list_executions, limit 20, {title}:", results)
    print("\nwrite, one execution (insert + 7 phase updates + finish, in one transaction):")
    for title, (wall, cpu) in writes.items():
        print(f"  {wall:6.1f} µs, CPU {cpu:6.1f} µs  {title}")
    _print_commands(commands, args.commands)


if __name__ == "__main__":
    main()
