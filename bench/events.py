"""Event matching and dispatch: the pattern index against 1,000 patterns, next to a naive scan,
and events per second end to end, from ``emit`` (an append to the event log) to queued jobs of
1,000 loops, one per pattern.

Goal (issue "The daemon", 2-core machine): matching >= 50,000 events/s in process. The anchor is
the naive scan a first version would write: every pattern, as an ``fnmatch``-style regular
expression compiled once, tried against every event name. Both sides match the same names in the
same run, interleaved round by round; medians of the rounds, in wall and CPU time a event.

End to end, the dispatcher follows the log with the same patterns, each the event trigger of its
own loop, and queues a job for every loop an event matches (as many as the naive scan finds);
the store has the daemon's default durability (SQLite, WAL, ``synchronous=FULL``). Wall and CPU
time (this process, the store's thread included) of the appends and of the dispatch.

    python bench/events.py [--patterns 1000] [--events 20000] [--rounds 5] [--dispatch 2000]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from usage import Spent, load_average, spent

MATCH_TARGET = 50_000


def patterns(count: int, rng: random.Random) -> list[str]:
    """Realistic shapes: mostly exact ``domain.entity.verb``, some ``*`` and ``**`` globs."""
    shapes = ("{d}.{e}.{v}", "{d}.*", "{d}.**", "**.{v}", "{d}.*.{v}", "{d}.{e}.**")
    weights = (70, 6, 6, 6, 6, 6)
    found = []
    for _ in range(count):
        shape = rng.choices(shapes, weights)[0]
        found.append(
            shape.format(
                d=f"domain{rng.randrange(40)}",
                e=f"entity{rng.randrange(30)}",
                v=f"verb{rng.randrange(20)}",
            )
        )
    return found


def names(count: int, rng: random.Random) -> list[str]:
    return [
        f"domain{rng.randrange(40)}.entity{rng.randrange(30)}.verb{rng.randrange(20)}"
        for _ in range(count)
    ]


def _regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for segment in pattern.split("."):
        parts.append({"*": r"[^.]+", "**": r".*"}.get(segment, re.escape(segment)))
    return re.compile(r"\.".join(parts).replace(r".*\.", r"(?:.*\.)?"))


def naive_rate(compiled: list[re.Pattern[str]], events: list[str]) -> Spent:
    with spent() as measured:
        for name in events:
            [p for p in compiled if p.fullmatch(name)]
    return measured


def index_rate(entries: list[str], events: list[str]) -> Spent:
    from loopengine.triggers import PatternIndex

    index = PatternIndex((p, i) for i, p in enumerate(entries))
    with spent() as measured:
        for name in events:
            index.match(name)
    return measured


def loops(entries: list[str]) -> list[Any]:
    """One loop per pattern, whose event trigger queues a job for every event it matches."""
    from loopengine.builtins import builtin_registry
    from loopengine.contract import Config, LoopLoader
    from loopengine.contract.checks import Env

    loader = LoopLoader(Env(builtin_registry(), frozenset(Config().storage)))
    built = []
    for index, pattern in enumerate(entries):
        text = (
            f"id: on_{index}\ntrigger: {{type: event, config: {{event_pattern: '{pattern}'}}}}\n"
            "concurrency: {max: 1, on_overlap: parallel, max_queue: 1000000}\n"
            "decide: {decision_tree: [], fallback_action: log_only}\n"
        )
        report = loader.load_text(text, f"on_{index}.yaml")
        assert report.loop is not None, report.diagnostics
        built.append(report.loop)
    return built


async def dispatch(entries: list[str], events: list[str], jobs: int, folder: Path) -> list[Spent]:
    """Wall and CPU time of ``events`` appended one transaction each (``emit``'s write), then
    of the dispatcher taking them from the log to ``jobs`` queued jobs."""
    from loopengine.daemon import DaemonLog
    from loopengine.daemon._dispatcher import CURSOR, Dispatcher
    from loopengine.store import Store, queue, signals

    built = loops(entries)
    async with Store.open(f"sqlite:///{folder / 'events.db'}") as store:
        with spent() as appended:
            for index, name in enumerate(events):
                now = time.time()
                last = await store.write(
                    lambda c, i=index, n=name, at=now: signals.insert_event(
                        c, n, "bench", {"page": i}, at
                    )
                )
        with open(os.devnull, "w") as devnull:
            dispatcher = Dispatcher(store, DaemonLog(devnull), lambda: None, poll_s=0.01)
            dispatcher.update(built, [])
            with spent() as dispatched:
                async with anyio.create_task_group() as group:
                    group.start_soon(dispatcher.run)
                    while await store.read(queue.cursor, CURSOR) < last:
                        await anyio.sleep(0.01)
                    group.cancel_scope.cancel()
        queued = (await store.read(queue.queue_depth))["queued"]
    if queued != jobs:
        raise SystemExit(f"the dispatcher queued {queued} jobs; the naive scan expects {jobs}")
    return [appended, dispatched]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dispatch", type=int, default=2000, help="events sent end to end")
    args = parser.parse_args()
    started_load = load_average()
    rng = random.Random(7)
    entries = patterns(args.patterns, rng)
    compiled = [_regex(p) for p in entries]
    fresh: list[tuple[Spent, int]] = []
    naive: list[tuple[Spent, int]] = []
    for _ in range(args.rounds):
        events = names(args.events, rng)
        sample = events[: max(1, args.events // 20)]
        fresh.append((index_rate(entries, events), len(events)))
        naive.append((naive_rate(compiled, sample), len(sample)))
    ours, anchor = (
        {
            "rate": statistics.median(count / run.wall for run, count in rounds),
            "cpu_us": statistics.median(run.cpu / count * 1e6 for run, count in rounds),
        }
        for rounds in (fresh, naive)
    )
    verdict = "ok" if ours["rate"] >= MATCH_TARGET else "MISSED"
    print(
        f"matching {args.patterns:,} patterns, medians of {args.rounds} interleaved rounds; "
        f"{started_load}:"
    )
    print(
        f"  PatternIndex.match   {ours['rate']:12,.0f} events/s   CPU {ours['cpu_us']:8.2f} µs an "
        f"event   = {ours['rate'] / anchor['rate']:,.0f}x the naive scan   "
        f"goal >= {MATCH_TARGET:,}   {verdict}"
    )
    print(
        f"  naive regex scan     {anchor['rate']:12,.0f} events/s   CPU {anchor['cpu_us']:8.2f} µs an event"
    )
    sent = names(args.dispatch, rng)
    jobs = sum(1 for name in sent for p in compiled if p.fullmatch(name))
    with tempfile.TemporaryDirectory() as tmp:
        appended, dispatched = anyio.run(dispatch, entries, sent, jobs, Path(tmp))
    print(
        f"end to end, {args.dispatch:,} events to {jobs:,} jobs of {args.patterns:,} loops "
        f"(SQLite, WAL, synchronous=FULL); {load_average()}:"
    )
    for label, run in (
        ("appended, one transaction each (as `emit`)", appended),
        ("dispatched from the log to queued jobs", dispatched),
    ):
        print(
            f"  {label:<44} {args.dispatch / run.wall:8,.0f} events/s   "
            f"wall {run.wall:6.2f} s   CPU {run.cpu:6.2f} s "
            f"({run.cpu / args.dispatch * 1e3:.2f} ms an event)"
        )
    print(
        f"  = {jobs / dispatched.wall:,.0f} jobs/s queued, CPU "
        f"{dispatched.cpu / jobs * 1e3:.3f} ms a job"
    )


if __name__ == "__main__":
    sys.exit(main())
