"""Per-execution cost of a 7-phase loop next to LangGraph and to raw SQLite, like for like.

    pip install -e '.[bench]'
    python bench/engine_overhead.py [--rounds 9] [--seconds 0.4] [--only KEY,KEY] [--runs N]

How: every side below runs once per round, in an order that rotates by one each round; a run
is a batch of executions sized from a warm-up to last about ``--seconds`` (or ``--runs`` each);
the figures are medians over the rounds of wall time (``perf_counter``) and CPU time
(``process_time``: every thread of the process, so the store's worker thread and LangGraph's
background checkpointing count too) per execution. Before every batch ``gc.collect()``; the
collector stays on during batches, for every side alike. Each persisted side writes its own WAL
database in one temporary folder, once with ``synchronous=FULL`` and once with ``NORMAL``.

Rows (``[key]`` for ``--only``; persisted keys end in ``-full`` or ``-normal``):
  loopengine, no persistence  [le-none]   the loop below on an engine that records nothing
                                          (``Engine(..., record=False)``; its store, in memory,
                                          is never touched by this loop).
  loopengine, in-memory store [le-memory] the same recorded in ``loopengine.testing.memory_store()``
                                          (SQLite ``:memory:``): every row, no disk.
  LangGraph invoke            [lg-invoke] 7-node linear ``StateGraph``, no-op nodes, no saver.
  loopengine, execution       [le-exec]   ``durability: execution``: one write transaction per
                                          execution (after one read transaction: last run and
                                          learned state), through the store.
  loopengine, phase           [le-phase]  ``durability: phase``, no-op skills: they finish before
                                          the store flushes, so the phase commits are grouped.
  loopengine, execution/phase, yielding   [le-exec-yield], [le-phase-yield] the same with the
                                          3 skills awaiting ``anyio.sleep(--pause-ms)``, as
                                          skills doing I/O do, so the store commits while they
                                          wait (4 commits an execution: start, detect, analyze
                                          and decide, act to the end; only the skills yield).
                                          Wall time is then mostly the sleeps: compare CPU.
  LangGraph + SqliteSaver     [lg-async]  its default ``durability="async"``: a checkpoint per
                                          step, written in the background; waited for at exit.
  LangGraph + SqliteSaver     [lg-exit]   ``durability="exit"``: one checkpoint per invoke.
  raw sqlite3 floor           [floor]     stdlib ``sqlite3``, one ``BEGIN IMMEDIATE``..``COMMIT``
                                          writing exactly the rows one loopengine execution
                                          writes (captured from a probe execution: same tables,
                                          same values, same JSON) into loopengine's own schema
                                          and indexes (made by its migrations); JSON encoded
                                          once per execution, no read transaction.
LangGraph's state is ``{"x": 0}``: it writes far less than loopengine, whose context alone is
over 1 KiB.

Goals, each a ratio against an anchor measured in the same run (judged at NORMAL; FULL shown):
  execution durability ≤ 1.5× the floor; ≥ 4× faster than LangGraph ``durability="exit"``;
  per-phase durability's CPU ≤ 1.3× execution durability's (yielding skills);
  no persistence ≥ 15× faster than LangGraph's plain invoke.

Fsyncs per execution: run a single side twice under strace and divide the difference, e.g.
``strace -f -e trace=fsync,fdatasync -c python bench/engine_overhead.py --only le-exec-full
--runs 100 --rounds 1`` (then ``--runs 300``). Counted so on 2026-11-23: at FULL, 1 for
loopengine execution durability, the floor and LangGraph "exit"; 1 for phase durability with
no-op skills (grouped), 4 with skills yielding 2 ms (~3 with 1 ms: fsyncs outlast the sleeps
and commits group); 17 for LangGraph "async". At NORMAL ≤ 0.15 (WAL checkpoints only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import re
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import anyio

from loopengine import LoopLoader, Registry, SkillContext, skill
from loopengine.builtins import builtin_registry
from loopengine.contract import Loop
from loopengine.contract.checks import Env
from loopengine.engine import Engine, Services
from loopengine.store import Store
from loopengine.testing import memory_store

PHASES = ("detect", "analyze", "decide", "act", "validate", "learn", "store")
SYNCS = ("full", "normal")
DISPLAY = (
    "le-none",
    "le-memory",
    "lg-invoke",
    *(
        f"{key}-{sync}"
        for sync in SYNCS
        for key in (
            "floor",
            "le-exec",
            "lg-exit",
            "lg-async",
            "le-phase",
            "le-exec-yield",
            "le-phase-yield",
        )
    ),
)
LOOP = """\
id: overhead
trigger: {type: manual}
durability: DURABILITY
detect:
  sources: [{skill: SKILL, name: source}]
analyze:
  analysis_steps: [{name: step, skill_id: SKILL}]
decide:
  decision_tree: [{condition: "input.go == `1`", action: act_now}]
act:
  actions: [{action_id: act_now, skill_id: SKILL}]
validate:
  assertions: [{expression: "input.go == `1`"}]
learn:
  feedback_sources: [{type: outcome, name: ok}]
store:
  audit_trail: {enabled: true}
params:
  go: {type: integer, default: 1}
"""


@skill("noop")
async def noop(ctx: SkillContext) -> dict[str, Any]:
    return {}


@skill("pause")
async def pause(ctx: SkillContext, seconds: float = 0.0) -> dict[str, Any]:
    await anyio.sleep(seconds)
    return {}


Batch = Callable[[int], Awaitable[None]]


@dataclass
class Side:
    key: str
    label: str
    batch: Batch
    count: int = 0
    wall_us: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)

    def wall(self) -> float:
        return statistics.median(self.wall_us)

    def cpu(self) -> float:
        return statistics.median(self.cpu_us)

    def spread(self) -> float:
        return (max(self.wall_us) - min(self.wall_us)) / self.wall()


def _sync_batch(call: Callable[[], object]) -> Batch:
    async def batch(count: int) -> None:
        for _ in range(count):
            call()

    return batch


# --- loopengine ---------------------------------------------------------------------------


def _registry() -> Registry:
    registry = builtin_registry()
    registry.add_object([noop, pause])
    return registry


def _loop(registry: Registry, folder: Path, durability: str, pause_s: float | None = None) -> Loop:
    """The loop, its 3 skills ``noop`` or (``pause_s`` given) ``pause`` for that long."""
    name = "noop" if pause_s is None else "pause"
    called = name if pause_s is None else f"pause, params: {{seconds: {pause_s!r}}}"
    path = folder / f"{durability}-{name}.yaml"
    path.write_text(LOOP.replace("DURABILITY", durability).replace("SKILL", called))
    report = LoopLoader(Env(registry)).load_file(path)
    assert report.loop is not None, [d.format() for d in report.diagnostics]
    return report.loop


def _engine_batch(engine: Engine, loop: Loop) -> Batch:
    async def batch(count: int) -> None:
        for _ in range(count):
            await engine.run(loop)

    return batch


async def _open_store(stack: AsyncExitStack, path: Path, sync: str) -> Store:
    return await stack.enter_async_context(Store.open(f"sqlite:///{path}?synchronous={sync}"))


async def _loopengine_sides(stack: AsyncExitStack, folder: Path, pause_s: float) -> list[Side]:
    registry = _registry()
    services = Services(registry, await stack.enter_async_context(memory_store()), base=folder)
    loop = _loop(registry, folder, "execution")
    sides = [
        Side(
            "le-none",
            "loopengine, no persistence",
            _engine_batch(Engine(services, record=False), loop),
        ),
        Side("le-memory", "loopengine, in-memory store", _engine_batch(Engine(services), loop)),
    ]
    variants = [
        ("le-exec", "loopengine, durability: execution", "execution", None),
        ("le-phase", "loopengine, durability: phase, no-op skills", "phase", None),
        ("le-exec-yield", "loopengine, durability: execution, yielding", "execution", pause_s),
        ("le-phase-yield", "loopengine, durability: phase, yielding", "phase", pause_s),
    ]
    for sync in SYNCS:
        for key, label, durability, pause in variants:
            store = await _open_store(stack, folder / f"{key}-{sync}.db", sync)
            engine = Engine(Services(registry, store, base=folder))
            batch = _engine_batch(engine, _loop(registry, folder, durability, pause))
            sides.append(Side(f"{key}-{sync}", f"{label}, {sync.upper()}", batch))
    return sides


# --- LangGraph ----------------------------------------------------------------------------


class _State(TypedDict, total=False):
    x: int


def _graph(checkpointer: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_State)
    for name in PHASES:
        graph.add_node(name, lambda state: {})
    graph.add_edge(START, PHASES[0])
    for first, second in itertools.pairwise(PHASES):
        graph.add_edge(first, second)
    graph.add_edge(PHASES[-1], END)
    return graph.compile(checkpointer=checkpointer)


def _connect(path: Path, sync: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={sync.upper()}")
    return connection


def _langgraph_sides(stack: AsyncExitStack, folder: Path) -> list[Side]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    plain = _graph()
    sides = [Side("lg-invoke", "LangGraph invoke", _sync_batch(lambda: plain.invoke({"x": 0})))]
    for sync in SYNCS:
        for durability in ("async", "exit"):
            connection = stack.enter_context(
                closing(_connect(folder / f"lg-{durability}-{sync}.db", sync))
            )
            graph = _graph(SqliteSaver(connection))

            def invoke(graph: Any = graph, durability: str = durability) -> None:
                config = {"configurable": {"thread_id": uuid.uuid4().hex}}
                graph.invoke({"x": 0}, config, durability=durability)

            label = f'LangGraph + SqliteSaver, durability="{durability}", {sync.upper()}'
            sides.append(Side(f"lg-{durability}-{sync}", label, _sync_batch(invoke)))
    return sides


# --- the raw floor ------------------------------------------------------------------------

_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    json: frozenset[str]
    rowid: str | None
    """An ``INTEGER PRIMARY KEY`` column: left out of inserts, SQLite assigns it."""


@dataclass
class _Writes:
    """What one execution wrote: rows inserted and rows updated, per table (JSON decoded)."""

    inserts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    updates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [f"{name} {len(rows)}" for name, rows in self.inserts.items()]
        parts += [f"{name} {len(rows)} updated" for name, rows in self.updates.items()]
        return ", ".join(parts)


def _schema(db: sqlite3.Connection) -> list[_Table]:
    names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    tables = []
    for name in names:
        info = db.execute(f'PRAGMA table_info("{name}")').fetchall()
        key = tuple(row[1] for row in sorted(info, key=lambda row: row[5]) if row[5])
        integer_key = len(key) == 1 and any(
            r[1] == key[0] and r[2].upper() == "INTEGER" for r in info
        )
        json_columns = frozenset(row[1] for row in info if row[2].upper() == "JSON")
        rowid = key[0] if integer_key else None
        tables.append(_Table(name, tuple(row[1] for row in info), key, json_columns, rowid))
    return tables


def _rows(db: sqlite3.Connection, table: _Table) -> dict[tuple[Any, ...], dict[str, Any]]:
    cursor = db.execute(f'SELECT * FROM "{table.name}"')
    names = [column[0] for column in cursor.description]
    rows = (dict(zip(names, values, strict=True)) for values in cursor)
    return {tuple(row[k] for k in table.key): row for row in rows}


def _decoded(table: _Table, row: dict[str, Any]) -> dict[str, Any]:
    return {k: json.loads(v) if k in table.json and v is not None else v for k, v in row.items()}


async def _capture(folder: Path) -> tuple[list[_Table], _Writes, int]:
    """The rows one steady-state loopengine execution (``durability: execution``) writes."""
    registry = _registry()
    path = folder / "probe.db"
    async with AsyncExitStack() as stack:
        engine = Engine(Services(registry, await _open_store(stack, path, "normal"), base=folder))
        loop = _loop(registry, folder, "execution")
        for _ in range(3):
            await engine.run(loop)
        with closing(sqlite3.connect(path)) as db:
            tables = _schema(db)
            before = {t.name: _rows(db, t) for t in tables}
            await engine.run(loop)
            after = {t.name: _rows(db, t) for t in tables}
    writes, json_bytes = _Writes(), 0
    for table in tables:
        old, new = before[table.name], after[table.name]
        assert old.keys() <= new.keys(), f"an execution deleted rows of {table.name}"
        inserted = [new[k] for k in new.keys() - old.keys()]
        updated = [new[k] for k in old.keys() & new.keys() if old[k] != new[k]]
        for target, rows in ((writes.inserts, inserted), (writes.updates, updated)):
            if rows:
                rows.sort(key=lambda row: [str(row[k]) for k in table.key])
                target[table.name] = [_decoded(table, row) for row in rows]
        json_bytes += sum(len(row[c]) for row in inserted + updated for c in table.json if row[c])
    return tables, writes, json_bytes


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class _Plan:
    """One statement run for each of ``rows``, taking ``columns`` of each."""

    sql: str
    table: _Table
    columns: tuple[str, ...]
    rows: list[dict[str, Any]]


def _insert(table: _Table, rows: list[dict[str, Any]]) -> _Plan:
    columns = tuple(c for c in table.columns if c != table.rowid)
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" * len(columns))
    return _Plan(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', table, columns, rows)


def _update(table: _Table, rows: list[dict[str, Any]]) -> _Plan:
    columns = tuple(c for c in table.columns if c not in table.key)
    sets = ", ".join(f'"{c}" = ?' for c in columns)
    where = " AND ".join(f'"{c}" = ?' for c in table.key)
    sql = f'UPDATE "{table.name}" SET {sets} WHERE {where}'
    return _Plan(sql, table, (*columns, *table.key), rows)


def _parameters(plans: list[_Plan]) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Each plan's SQL and parameters, JSON encoded, ids (32 hex digits) replaced by new ones."""
    fresh: dict[str, str] = {}

    def value(table: _Table, column: str, item: Any) -> Any:
        if column in table.json:
            return None if item is None else _dumps(item)
        if isinstance(item, str) and _ID.fullmatch(item):
            return fresh.setdefault(item, uuid.uuid4().hex)
        return item

    return [
        (plan.sql, [tuple(value(plan.table, c, row[c]) for c in plan.columns) for row in plan.rows])
        for plan in plans
    ]


async def _floor_db(
    path: Path, sync: str, tables: list[_Table], writes: _Writes
) -> sqlite3.Connection:
    """loopengine's schema (made by its migrations) holding the rows an execution updates."""
    async with Store.open(f"sqlite:///{path}"):
        pass
    db = _connect(path, sync)
    by_name = {t.name: t for t in tables}
    seeds = [_insert(by_name[name], rows) for name, rows in writes.updates.items()]
    with db:
        for sql, parameters in _parameters(seeds):
            db.executemany(sql, parameters)
    db.isolation_level = None
    return db


async def _floor_sides(stack: AsyncExitStack, folder: Path) -> tuple[list[Side], str]:
    tables, writes, json_bytes = await _capture(folder)
    by_name = {t.name: t for t in tables}
    plans = [_insert(by_name[name], rows) for name, rows in writes.inserts.items()]
    plans += [_update(by_name[name], rows) for name, rows in writes.updates.items()]
    rows = sum(len(plan.rows) for plan in plans)
    sides = []
    for sync in SYNCS:
        db = await _floor_db(folder / f"floor-{sync}.db", sync, tables, writes)
        stack.enter_context(closing(db))

        def write(db: sqlite3.Connection = db) -> None:
            db.execute("BEGIN IMMEDIATE")
            for sql, parameters in _parameters(plans):
                db.executemany(sql, parameters)
            db.execute("COMMIT")

        changes = db.total_changes
        write()
        assert db.total_changes - changes == rows, "the floor did not write every row"
        label = f"raw sqlite3 floor, {sync.upper()}"
        sides.append(Side(f"floor-{sync}", label, _sync_batch(write)))
    return sides, f"{writes.summary()}; {json_bytes} bytes of JSON"


# --- measuring ----------------------------------------------------------------------------


async def _timed(side: Side, count: int) -> tuple[float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    await side.batch(count)
    return (time.perf_counter() - wall) / count * 1e6, (time.process_time() - cpu) / count * 1e6


async def _calibrate(sides: list[Side], seconds: float, runs: int | None) -> None:
    """Warm every side up, then size its batches: ``runs``, or to last about ``seconds``.

    The warm-up is 20 runs with ``runs`` given (so strace counts differ by the batches only),
    else at least 0.1 s of runs.
    """
    for side in sides:
        count, per_run_us = 10, 0.0
        while count * per_run_us < 100_000 and not (runs and per_run_us):
            count *= 2
            per_run_us, _ = await _timed(side, count)
        side.count = runs or max(20, round(seconds * 1e6 / per_run_us))


def _rotations(sides: list[Side], rounds: int) -> Iterator[list[Side]]:
    for number in range(rounds):
        shift = number % len(sides)
        yield sides[shift:] + sides[:shift]


async def _measure(sides: list[Side], rounds: int) -> None:
    for order in _rotations(sides, rounds):
        for side in order:
            wall, cpu = await _timed(side, side.count)
            side.wall_us.append(wall)
            side.cpu_us.append(cpu)


# --- the report ---------------------------------------------------------------------------


def _table(sides: list[Side]) -> None:
    print(f"{'':58}{'wall µs':>10}{'CPU µs':>10}{'spread':>8}{'runs':>7}")
    for side in sides:
        figures = f"{side.wall():>10.1f}{side.cpu():>10.1f}{side.spread():>7.0%}"
        print(f"{side.label:58}{figures} {side.count:>6}")


@dataclass(frozen=True)
class _Ratio:
    """``top / bottom`` of one measure; ``{s}`` in a key stands for the sync level."""

    label: str
    top: str
    bottom: str
    measure: str
    limit: float | None = None
    at_most: bool = True

    def line(self, found: dict[str, Side], sync: str | None) -> str | None:
        top, bottom = (key.format(s=sync) for key in (self.top, self.bottom))
        if top not in found or bottom not in found:
            return None
        value = getattr(found[top], self.measure)() / getattr(found[bottom], self.measure)()
        measure = "CPU" if self.measure == "cpu" else self.measure
        label = f"{self.label}, {measure}" + (f", {sync.upper()}" if sync else "")
        goal = verdict = ""
        if self.limit is not None:
            goal = f"{'≤' if self.at_most else '≥'} {self.limit:g}×"
            met = value <= self.limit if self.at_most else value >= self.limit
            verdict = ("ok" if met else "MISSED") if sync in (None, "normal") else "(not judged)"
        return f"  {label:72}{value:>7.2f}×  {goal:>7}  {verdict}"


RATIOS = (
    _Ratio("execution durability / raw floor", "le-exec-{s}", "floor-{s}", "wall", 1.5),
    _Ratio(
        'LangGraph durability="exit" / execution durability',
        "lg-exit-{s}",
        "le-exec-{s}",
        "wall",
        4,
        at_most=False,
    ),
    _Ratio(
        "LangGraph default durability / execution durability", "lg-async-{s}", "le-exec-{s}", "wall"
    ),
    _Ratio(
        "phase / execution durability, yielding skills",
        "le-phase-yield-{s}",
        "le-exec-yield-{s}",
        "cpu",
        1.3,
    ),
    _Ratio(
        "phase / execution durability, yielding skills",
        "le-phase-yield-{s}",
        "le-exec-yield-{s}",
        "wall",
    ),
    _Ratio("phase / execution durability, no-op skills", "le-phase-{s}", "le-exec-{s}", "cpu"),
)
NO_PERSISTENCE = _Ratio(
    "LangGraph invoke / no persistence",
    "lg-invoke",
    "le-none",
    "wall",
    15,
    at_most=False,
)


def _goals(found: dict[str, Side]) -> None:
    print("\nratios of medians measured in this run (goals judged at NORMAL):")
    lines = [ratio.line(found, sync) for sync in ("normal", "full") for ratio in RATIOS]
    lines.append(NO_PERSISTENCE.line(found, None))
    for line in lines:
        if line is not None:
            print(line)
    for sync in ("normal", "full"):
        phase, execution = found.get(f"le-phase-yield-{sync}"), found.get(f"le-exec-yield-{sync}")
        if phase is not None and execution is not None:
            extra = phase.cpu() - execution.cpu()
            what = f"per-phase durability's extra CPU per execution, yielding, {sync.upper()}"
            print(f"  {what}: {extra:+.0f} µs")


async def _run(args: argparse.Namespace, folder: Path) -> None:
    wanted = set(args.only.split(",")) if args.only else None
    async with AsyncExitStack() as stack:
        sides = await _loopengine_sides(stack, folder, args.pause_ms / 1000)
        sides += _langgraph_sides(stack, folder)
        floor, captured = await _floor_sides(stack, folder)
        sides += floor
        sides = sorted(
            (s for s in sides if wanted is None or s.key in wanted),
            key=lambda side: DISPLAY.index(side.key),
        )
        await _calibrate(sides, args.seconds, args.runs)
        await _measure(sides, args.rounds)
    print(
        f"medians of {args.rounds} rounds in rotating order, per execution; yielding skills sleep"
        f" {args.pause_ms:g} ms; the floor writes {captured}\n"
    )
    _table(sides)
    _goals({s.key: s for s in sides})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="rounds (medians over them)")
    parser.add_argument("--seconds", type=float, default=0.4, help="about how long a batch runs")
    parser.add_argument("--runs", type=int, help="executions per batch, instead of --seconds")
    parser.add_argument("--only", help="comma-separated keys of the sides to run")
    parser.add_argument("--pause-ms", type=float, default=2.0, help="sleep of yielding skills")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(args, Path(tmp)))


if __name__ == "__main__":
    main()
