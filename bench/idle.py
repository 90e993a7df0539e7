"""An idle daemon's cost: ``loopengine daemon`` serving 1,000 loop files (manual, event, cron
and threshold triggers) with nothing to do, on a SQLite file and on a private PostgreSQL server.

After the daemon is ready and has settled, its CPU time over ``--seconds`` (30) is read from
``/proc``, and so is PostgreSQL's (the postmaster and its backends); PostgreSQL's own idle cost
with no client is measured first, for the same time, in the same run. Each figure is a share of
one core. Goal (issue 26, "Idle cost"): the daemon below 1 % of a core on both databases.

    python bench/idle.py [--loops 1000] [--seconds 30] [--settle 5] [--no-postgres]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from daemons import daemon, postgres, postgres_available, tree_cpu_seconds, workspace
from usage import cpu_seconds, load_average

GOAL = 0.01


def _share(measure: Callable[[], float], seconds: float) -> float:
    """The share of one core ``measure`` (CPU seconds so far) grows by over ``seconds``."""
    cpu, wall = measure(), time.monotonic()
    time.sleep(seconds)
    return (measure() - cpu) / (time.monotonic() - wall)


def idle(database: str, loops: int, seconds: float, settle: float, server: int | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = workspace(root, loops, database)
        with daemon(root, env) as (process, _):
            time.sleep(settle)
            cpu, wall = cpu_seconds(process.pid), time.monotonic()
            database_cpu = tree_cpu_seconds(server) if server is not None else 0.0
            time.sleep(seconds)
            elapsed = time.monotonic() - wall
            share = (cpu_seconds(process.pid) - cpu) / elapsed
            verdict = "meets" if share < GOAL else "misses"
            print(f"  daemon: {share:.2%} of a core ({verdict} the goal of < {GOAL:.0%})")
            if server is not None:
                spent = (tree_cpu_seconds(server) - database_cpu) / elapsed
                print(f"  PostgreSQL serving it: {spent:.2%} of a core")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args()
    print(f"{options.loops} loops, idle for {options.seconds:g} s; {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        print("SQLite (file, FULL sync)")
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        idle(url, options.loops, options.seconds, options.settle, None)
    if not options.no_postgres and postgres_available():
        with postgres() as (url, server):
            alone = _share(lambda: tree_cpu_seconds(server), options.seconds)
            print(f"PostgreSQL (alone, no client: {alone:.2%} of a core)")
            idle(url, options.loops, options.seconds, options.settle, server)
    print(load_average())


if __name__ == "__main__":
    main()
