"""Per-execution overhead of a 7-phase loop with no-op skills, next to LangGraph, in one run.

    pip install -e '.[bench]'
    python bench/engine_overhead.py [--runs 2000]

Rows: (a) no persistence vs a 7-node linear LangGraph ``StateGraph``; (b) SQLite with
``durability: execution`` and (c) with ``durability: phase`` vs LangGraph with its SQLite
checkpointer, all at ``synchronous=FULL``; and the raw floor: stdlib ``sqlite3`` writing one
execution row and 7 phase rows in one WAL transaction. Goals: (a) ≥ 20× LangGraph's plain
invoke; (b) ≥ 20× LangGraph + checkpointer and ≤ 3× the floor; (c) ≥ 5× LangGraph + checkpointer.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from loopengine import SkillContext, skill
from loopengine.contract import Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.engine._runner import Engine
from loopengine.engine._services import Services
from loopengine.skills import Registry
from loopengine.store import Store

PHASES = ("detect", "analyze", "decide", "act", "validate", "learn", "store")
LOOP = """\
id: overhead
trigger: {type: manual}
durability: DURABILITY
detect:
  sources: [{skill: noop, name: source}]
analyze:
  analysis_steps: [{name: step, skill_id: noop}]
decide:
  decision_tree: [{condition: "input.go == `1`", action: act_now}]
act:
  actions: [{action_id: act_now, skill_id: noop}]
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


def _loop(registry: Registry, folder: Path, durability: str) -> Loop:
    path = folder / f"{durability}.yaml"
    path.write_text(LOOP.replace("DURABILITY", durability))
    report = LoopLoader(Env(registry)).load_file(path)
    assert report.loop is not None, [d.format() for d in report.diagnostics]
    return report.loop


def _per_run_us(run: Callable[[], None], runs: int) -> float:
    for _ in range(min(50, runs)):
        run()
    gc.collect()
    started = time.perf_counter()
    for _ in range(runs):
        run()
    return (time.perf_counter() - started) / runs * 1e6


async def _engine_us(engine: Engine, loop: Loop, runs: int) -> float:
    for _ in range(min(50, runs)):
        await engine.run(loop)
    gc.collect()
    started = time.perf_counter()
    for _ in range(runs):
        await engine.run(loop)
    return (time.perf_counter() - started) / runs * 1e6


async def _loopengine(folder: Path, runs: int) -> dict[str, float]:
    registry = Registry.with_builtins()
    registry.add(noop.__loopengine_definition__)  # type: ignore[attr-defined]
    plain = Engine(Services(registry, None, base=folder))
    results = {"a": await _engine_us(plain, _loop(registry, folder, "phase"), runs)}
    store = await Store.open(f"sqlite:///{folder / 'loopengine.db'}")
    durable = Engine(Services(registry, store, base=folder))
    results["b"] = await _engine_us(durable, _loop(registry, folder, "execution"), runs)
    results["c"] = await _engine_us(durable, _loop(registry, folder, "phase"), max(runs // 4, 50))
    await store.close()
    return results


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


def _langgraph(folder: Path, runs: int) -> dict[str, float]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    plain = _graph()
    results = {"plain": _per_run_us(lambda: plain.invoke({"x": 0}), runs)}
    connection = sqlite3.connect(folder / "langgraph.db", check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    saved = _graph(SqliteSaver(connection))

    def invoke() -> None:
        saved.invoke({"x": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}})

    results["checkpointer"] = _per_run_us(invoke, max(runs // 4, 50))
    connection.close()
    return results


def _floor(folder: Path, runs: int) -> float:
    db = sqlite3.connect(folder / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE executions (id TEXT PRIMARY KEY, loop_id TEXT, outcome TEXT, started_at REAL, completed_at REAL, context TEXT)"
    )
    db.execute(
        "CREATE TABLE phases (execution_id TEXT, seq INTEGER, phase TEXT, started_at REAL, completed_at REAL, data TEXT, PRIMARY KEY (execution_id, seq))"
    )
    data = json.dumps({})

    def write() -> None:
        execution = uuid.uuid4().hex
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO executions VALUES (?, ?, ?, ?, ?, ?)",
            (execution, "l", "completed", now, now, data),
        )
        db.executemany(
            "INSERT INTO phases VALUES (?, ?, ?, ?, ?, ?)",
            [(execution, seq, phase, now, now, data) for seq, phase in enumerate(PHASES)],
        )
        db.execute("COMMIT")

    result = _per_run_us(write, runs)
    db.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours = asyncio.run(_loopengine(folder, args.runs))
        theirs = _langgraph(folder, args.runs)
        floor = _floor(folder, args.runs)
    rows = [
        ("(a) no persistence", ours["a"], theirs["plain"], "LangGraph invoke", 20.0),
        (
            "(b) SQLite, durability: execution",
            ours["b"],
            theirs["checkpointer"],
            "LangGraph + SqliteSaver",
            20.0,
        ),
        (
            "(c) SQLite, durability: phase",
            ours["c"],
            theirs["checkpointer"],
            "LangGraph + SqliteSaver",
            5.0,
        ),
    ]
    print(f"{'':36}{'loopengine':>12}{'anchor':>12}  {'× faster':>9}  goal")
    for label, us, anchor, name, goal in rows:
        ratio = anchor / us
        verdict = "ok" if ratio >= goal else "MISSED"
        print(
            f"{label:36}{us:>9.1f} µs{anchor:>9.1f} µs  {ratio:>8.1f}×  ≥{goal:.0f}× {name}: {verdict}"
        )
    within = ours["b"] / floor
    print(f"{'raw sqlite3 floor (1 + 7 rows, 1 txn)':36}{floor:>9.1f} µs")
    print(f"(b) is {within:.2f}× the raw floor (goal ≤ 3×: {'ok' if within <= 3 else 'MISSED'})")


if __name__ == "__main__":
    main()
