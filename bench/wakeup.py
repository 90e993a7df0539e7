"""How soon an idle daemon starts a manual job: ``loopengine daemon`` serving 1,000 loop files,
on a SQLite file and on a private PostgreSQL server.

Through the API: ``POST /loops/loop0/trigger``, then the time from just before the request to
the start its execution records (``executions.started_at``), split into the request's write
(the job's ``created_at``) and the wait for a worker; the daemon is left idle for 0.3 to 0.7 s
between two triggers, so its workers rest. From another process: ``loopengine trigger loop0``,
the time from the job's queueing to its start (what the notification, or SQLite's short poll,
buys). Medians and 95th percentiles. Goal (issue 26, "Wake-ups"): a trigger on an idle daemon
starts within 20 ms on PostgreSQL.

    python bench/wakeup.py [--loops 1000] [--triggers 50] [--cli 10] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import sqlalchemy as sa
from daemons import daemon, postgres, postgres_available, workspace
from usage import load_average, percentile

GOAL_S = 0.020
_STARTED = sa.text(
    "SELECT j.created_at, e.started_at FROM jobs j JOIN executions e ON e.job_id = j.id "
    "WHERE j.id = :job"
)


def _started(engine: sa.Engine, job: str) -> tuple[float, float]:
    """The job's ``created_at`` and its execution's ``started_at``, once it started."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            row = connection.execute(_STARTED, {"job": job}).first()
        if row is not None:
            return float(row[0]), float(row[1])
        time.sleep(0.002)
    raise SystemExit(f"job {job} did not start within a minute")


def _show(name: str, seconds: list[float]) -> None:
    median, p95 = statistics.median(seconds), percentile(seconds, 0.95)
    print(f"  {name}: median {median * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms (n={len(seconds)})")


def wakeups(database: str, loops: int, triggers: int, cli: int) -> None:
    rng = random.Random(26)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = workspace(root, loops, database)
        engine = sa.create_engine(database)
        with daemon(root, env) as (_, api), httpx.Client(base_url=api, timeout=30) as client:
            time.sleep(2)
            total, write, wait = [], [], []
            for _ in range(triggers):
                time.sleep(rng.uniform(0.3, 0.7))
                sent = time.time()
                answer = client.post("/loops/loop0/trigger", json={})
                answer.raise_for_status()
                created, started = _started(engine, answer.json()["job_id"])
                total.append(started - sent)
                write.append(created - sent)
                wait.append(started - created)
            queued = []
            for _ in range(cli):
                done = subprocess.run(
                    [sys.executable, "-m", "loopengine", "trigger", "loop0", "--json"],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                created, started = _started(engine, json.loads(done.stdout)["job_id"])
                queued.append(started - created)
        engine.dispose()
    _show("API trigger, request to start", total)
    verdict = "met" if statistics.median(total) <= GOAL_S else "missed"
    print(f"    goal: a median within {GOAL_S * 1000:.0f} ms, {verdict}")
    _show("  of which the request's write", write)
    _show("  of which the wait for a worker", wait)
    if queued:
        _show("loopengine trigger (another process), queued to start", queued)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=1000)
    parser.add_argument("--triggers", type=int, default=50)
    parser.add_argument("--cli", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args()
    print(f"{options.loops} loops; {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        print("SQLite (file, FULL sync)")
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        wakeups(url, options.loops, options.triggers, options.cli)
    if not options.no_postgres and postgres_available():
        with postgres() as (url, _):
            print("PostgreSQL")
            wakeups(url, options.loops, options.triggers, options.cli)
    print(load_average())


if __name__ == "__main__":
    main()
