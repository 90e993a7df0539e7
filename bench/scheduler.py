"""The cron scheduler with 10,000 loops, next to APScheduler 3 on the same cron set.

Goals (issue "The daemon", 2-core machine): fire lateness p99 < 100 ms, idle CPU < 1 %, RSS per
loop at most APScheduler's per job. Both sides persist each fire in SQLite at the same durability (WAL,
``synchronous=FULL``: loopengine's default; APScheduler's SQLAlchemy job store set to it), run in
fresh processes, side by side round by round. A fire's lateness is taken once the write that
records it has committed: loopengine's slot row with its job (one transaction for the slots due
together), APScheduler's job with its next run time (after the job went to its executor). Both
run one second before their window is measured.

    python bench/scheduler.py [--loops 10000] [--fewer 1000] [--window 20] [--rounds 3]

``load``: every loop fires every five minutes at its own second (~33 fires/s). ``idle``: every
loop fires once a year; CPU is measured over the window, when nothing is due. Each side's process
CPU time over the window is printed beside the window's wall time, and under load per fire.

RSS per loop is the slope between two runs, one with ``--loops`` and one with ``--fewer`` loops;
the fixed part is printed beside it, not judged. loopengine runs as the daemon does: the loop
files in a folder (``LoopFolder``, which keeps a record of each loop and a few built) and the
scheduler over them; its fixed part is its imports, the open store, the folder and the scheduler
with one loop. APScheduler's: its imports, its job store and scheduler, before any job. Both
sides collect garbage once their fixed part and once their jobs are set up, and read RSS at the
start of the window.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from usage import Spent, load_average, percentile, spent

LATENESS_P99_TARGET_MS = 100.0
IDLE_CPU_TARGET = 1.0
WARM_UP_S = 1.0


def expression(index: int, mode: str) -> str:
    """Loop ``index``'s schedule: six fields, seconds first."""
    if mode == "idle":
        return "0 0 0 1 1 *"
    return f"{index % 60} {(index // 60) % 5}-59/5 * * * *"


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Lateness:
    """Each fire's lateness, of the slots due from the window's start on (slots that came due
    while the loops were loading, fired late, are not the scheduler's lateness)."""

    def __init__(self) -> None:
        self.since = float("inf")
        self.values: list[float] = []

    def start(self) -> None:
        self.since = time.time()
        self.values.clear()

    def add(self, slot: float, committed: float) -> None:
        if slot >= self.since:
            self.values.append((committed - slot) * 1000)


class Committed:
    """The store as the scheduler uses it, taking the lateness of each slot it queues once the
    write that records it has committed."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.late = Lateness()

    async def read(self, *call: Any) -> Any:
        return await self.store.read(*call)

    def submit(self, operation: Any, slots: list[Any], now: float) -> Any:
        pending = self.store.submit(operation, slots, now)

        def committed(error: BaseException | None) -> None:
            at = time.time()
            for arrival, why in slots:
                if error is None and why is None:
                    self.late.add(arrival.slot, at)

        pending.on_done = committed
        return pending


def window_figures(late: list[float], window: Spent, fixed: float, rss: float) -> dict[str, Any]:
    return {
        "lateness_ms": late,
        "wall_s": window.wall,
        "cpu_s": window.cpu,
        "rss_mib": rss,
        "fixed_mib": fixed,
    }


async def loopengine_side(loops: int, mode: str, window: float, folder: Path) -> dict[str, Any]:
    from loopengine.builtins import builtin_registry
    from loopengine.contract import Config, LoopLoader
    from loopengine.contract.checks import Env
    from loopengine.daemon import DaemonLog, LoopFolder
    from loopengine.daemon._daemon import SCAN_BATCH
    from loopengine.daemon._scheduler import Scheduler
    from loopengine.store import Store

    files = folder / "loops"
    files.mkdir()

    def write(index: int) -> None:
        (files / f"loop_{index}.yaml").write_text(
            f"id: loop_{index}\n"
            f'trigger: {{type: cron, config: {{expression: "{expression(index, mode)}", '
            "catchup: skip}}\n"
            "decide: {decision_tree: [], fallback_action: log_only}\n"
        )

    async def scan() -> None:
        """As the daemon scans its folder (``Daemon.rescan``), ``SCAN_BATCH`` files at a time."""
        while True:
            changes = served.scan(SCAN_BATCH)
            await scheduler.update(changes.loaded, changes.removed)
            if not changes.more:
                return

    write(0)
    async with Store.open(f"sqlite:///{folder / 'loopengine.db'}") as store:
        committed = Committed(store)
        with open(os.devnull, "w") as devnull:
            log = DaemonLog(devnull)
            loader = LoopLoader(Env(builtin_registry(), frozenset(Config().storage)))
            served = LoopFolder(files, loader, log)
            scheduler = Scheduler(committed, log, lambda: None)
            await scan()
            gc.collect()
            fixed = rss_mib()
            for index in range(1, loops):
                write(index)
            await scan()
            gc.collect()
            async with anyio.create_task_group() as group:
                group.start_soon(scheduler.run)
                await anyio.sleep(WARM_UP_S)
                committed.late.start()
                rss = rss_mib()
                with spent() as measured:
                    await anyio.sleep(window)
                late = list(committed.late.values)
                group.cancel_scope.cancel()
    return window_figures(late, measured, fixed, rss)


def apscheduler_job() -> None:
    """What every APScheduler job runs: nothing (lateness is taken when its fire is recorded)."""


def apscheduler_side(loops: int, mode: str, window: float, folder: Path) -> dict[str, Any]:
    import asyncio

    import sqlalchemy
    from apscheduler.executors.asyncio import AsyncIOExecutor
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from apscheduler.triggers.cron import CronTrigger

    late = Lateness()
    handed: dict[str, float] = {}

    class HandOver(AsyncIOExecutor):
        def submit_job(self, job: Any, run_times: list[Any]) -> None:
            super().submit_job(job, run_times)
            handed[job.id] = run_times[-1].timestamp()

    class Recorded(SQLAlchemyJobStore):
        """Takes a fire's lateness once the job's next run time has committed."""

        def update_job(self, job: Any) -> None:
            super().update_job(job)
            slot = handed.pop(job.id, None)
            if slot is not None:
                late.add(slot, time.time())

    engine = sqlalchemy.create_engine(f"sqlite:///{folder / 'apscheduler.db'}")

    @sqlalchemy.event.listens_for(engine, "connect")
    def durability(connection: Any, _record: Any) -> None:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")

    async def main() -> dict[str, Any]:
        scheduler = AsyncIOScheduler(
            jobstores={"default": Recorded(engine=engine)},
            executors={"default": HandOver()},
            timezone="UTC",
        )
        gc.collect()
        fixed = rss_mib()
        for index in range(loops):
            second, minute, *rest = expression(index, mode).split()
            trigger = CronTrigger(
                second=second,
                minute=minute,
                hour=rest[0],
                day=rest[1],
                month=rest[2],
                timezone="UTC",
            )
            scheduler.add_job(
                apscheduler_job,
                trigger,
                id=f"loop_{index}",
                coalesce=True,
                misfire_grace_time=None,
                max_instances=1,
            )
        gc.collect()
        scheduler.start()
        await asyncio.sleep(WARM_UP_S)
        late.start()
        rss = rss_mib()
        with spent() as measured:
            await asyncio.sleep(window)
        taken = list(late.values)
        scheduler.shutdown(wait=False)
        return window_figures(taken, measured, fixed, rss)

    return asyncio.run(main())


def child(side: str, loops: int, mode: str, window: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if side == "loopengine":
            result = anyio.run(loopengine_side, loops, mode, window, Path(tmp))
        else:
            result = apscheduler_side(loops, mode, window, Path(tmp))
    print(json.dumps(result))


def measure(side: str, loops: int, mode: str, window: float) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            side,
            "--loops",
            str(loops),
            "--mode",
            mode,
            "--window",
            str(window),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} {mode} failed:\n{done.stdout}{done.stderr}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--fewer",
        type=int,
        default=1_000,
        help="loops of the second size RSS is read at (RSS per loop is the slope between both)",
    )
    parser.add_argument("--child", choices=("loopengine", "apscheduler"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("load", "idle"), default="load", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.loops, args.mode, args.window)
        return
    sides = ("loopengine", "apscheduler")
    started_load = load_average()
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for mode in ("load", "idle"):
            for side in sides:
                results.setdefault((side, mode), []).append(
                    measure(side, args.loops, mode, args.window)
                )
        for side in sides:
            results.setdefault((side, "fewer"), []).append(
                measure(side, args.fewer, "load", WARM_UP_S)
            )
    print(
        f"{args.loops:,} cron loops ({args.fewer:,} for the RSS slope), {args.window:g} s windows, "
        f"medians of {args.rounds} rounds "
        "(sides interleaved, fresh processes, both in SQLite, WAL, synchronous=FULL, lateness "
        f"taken once a fire's write has committed); {started_load} at the start, "
        f"{load_average()} at the end"
    )
    figures: dict[str, dict[str, float]] = {}
    for side in sides:
        load, idle = results[(side, "load")], results[(side, "idle")]
        late = [run["lateness_ms"] for run in load]
        figures[side] = {
            "fires": statistics.median(len(values) for values in late),
            "p50": statistics.median(percentile(values, 0.50) for values in late),
            "p99": statistics.median(percentile(values, 0.99) for values in late),
            "busy_wall": statistics.median(run["wall_s"] for run in load),
            "busy_cpu_s": statistics.median(run["cpu_s"] for run in load),
            "busy_cpu": statistics.median(100 * run["cpu_s"] / run["wall_s"] for run in load),
            "cpu_per_fire_ms": statistics.median(
                1000 * run["cpu_s"] / max(1, len(run["lateness_ms"])) for run in load
            ),
            "idle_wall": statistics.median(run["wall_s"] for run in idle),
            "idle_cpu_s": statistics.median(run["cpu_s"] for run in idle),
            "idle_cpu": statistics.median(100 * run["cpu_s"] / run["wall_s"] for run in idle),
            "rss": statistics.median(run["rss_mib"] for run in load),
            "fixed": statistics.median(run["fixed_mib"] for run in load),
            "rss_fewer": statistics.median(run["rss_mib"] for run in results[(side, "fewer")]),
        }
        f = figures[side]
        f["per_loop_kib"] = (f["rss"] - f["rss_fewer"]) * 1024 / (args.loops - args.fewer)
        print(
            f"  {side:<12} fires/window {f['fires']:6.0f}   lateness p50 {f['p50']:7.1f} ms   "
            f"p99 {f['p99']:7.1f} ms\n"
            f"  {'':<12} under load: CPU {f['busy_cpu_s']:6.2f} s in {f['busy_wall']:.1f} s wall "
            f"({f['busy_cpu']:5.1f} %), {f['cpu_per_fire_ms']:.2f} ms a fire   "
            f"idle: CPU {f['idle_cpu_s']:6.3f} s in {f['idle_wall']:.1f} s wall "
            f"({f['idle_cpu']:5.2f} %)\n"
            f"  {'':<12} RSS {f['rss']:6.1f} MiB with {args.loops:,} loops, "
            f"{f['rss_fewer']:.1f} with {args.fewer:,}: {f['per_loop_kib']:.2f} KiB a loop; "
            f"fixed {f['fixed']:.1f} MiB (one loop)"
        )
    ours, anchor = figures["loopengine"], figures["apscheduler"]
    print(
        f"goals: p99 < {LATENESS_P99_TARGET_MS:g} ms: "
        f"{'ok' if ours['p99'] < LATENESS_P99_TARGET_MS else 'MISSED'} "
        f"({ours['p99'] / anchor['p99']:.2f}x APScheduler)   "
        f"idle CPU < {IDLE_CPU_TARGET:g} %: {'ok' if ours['idle_cpu'] < IDLE_CPU_TARGET else 'MISSED'}   "
        f"RSS a loop <= APScheduler's a job: "
        f"{'ok' if ours['per_loop_kib'] <= anchor['per_loop_kib'] else 'MISSED'} "
        f"({ours['per_loop_kib'] / anchor['per_loop_kib']:.2f}x)"
    )


if __name__ == "__main__":
    main()
