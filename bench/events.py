"""Event matching and dispatch: the pattern index against 1,000 patterns, next to a naive scan,
and events per second end to end, from ``emit`` (an append to the event log) to a queued job.

Goal (issue "The daemon", 2-core machine): matching >= 50,000 events/s in process. The anchor is
the naive scan a first version would write: every pattern, as an ``fnmatch``-style regular
expression compiled once, tried against every event name. Both sides match the same names in the
same run, interleaved round by round; medians of the rounds.

    python bench/events.py [--patterns 1000] [--events 20000] [--rounds 5] [--dispatch 2000]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

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


def naive_rate(compiled: list[re.Pattern[str]], events: list[str]) -> float:
    started = time.perf_counter()
    for name in events:
        [p for p in compiled if p.fullmatch(name)]
    return len(events) / (time.perf_counter() - started)


def index_rate(entries: list[str], events: list[str]) -> float:
    from loopengine.triggers import PatternIndex

    index = PatternIndex((p, i) for i, p in enumerate(entries))
    started = time.perf_counter()
    for name in events:
        index.match(name)
    return len(events) / (time.perf_counter() - started)


async def dispatch_rate(count: int, folder: Path) -> tuple[float, float]:
    """Events/s appended (``emit``'s write), and events/s from the log to queued jobs."""
    from loopengine.builtins import builtin_registry
    from loopengine.contract import Config, LoopLoader
    from loopengine.contract.checks import Env
    from loopengine.daemon import DaemonLog
    from loopengine.daemon._dispatcher import Dispatcher
    from loopengine.store import Store, queue, signals

    loader = LoopLoader(Env(builtin_registry(), frozenset(Config().storage)))
    text = (
        "id: on_page\ntrigger: {type: event, config: {event_pattern: 'seo.page.*'}}\n"
        "concurrency: {max: 1, on_overlap: parallel, max_queue: 1000000}\n"
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    report = loader.load_text(text, "on_page.yaml")
    assert report.loop is not None, report.diagnostics
    async with Store.open(f"sqlite:///{folder / 'events.db'}?synchronous=normal") as store:
        started = time.perf_counter()
        for index in range(count):
            now = time.time()
            await store.write(
                lambda c, i=index, at=now: signals.insert_event(
                    c, "seo.page.updated", "bench", {"page": i}, at
                )
            )
        appended = count / (time.perf_counter() - started)
        with open("/dev/null", "w") as devnull:
            dispatcher = Dispatcher(store, DaemonLog(devnull), lambda: None, poll_s=0.01)
            dispatcher.update([report.loop], [])
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                group.start_soon(dispatcher.run)
                while (await store.read(queue.queue_depth))["queued"] < count:
                    await anyio.sleep(0.01)
                group.cancel_scope.cancel()
        queued = count / (time.perf_counter() - started)
    return appended, queued


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dispatch", type=int, default=2000, help="events sent end to end")
    args = parser.parse_args()
    rng = random.Random(7)
    entries = patterns(args.patterns, rng)
    compiled = [_regex(p) for p in entries]
    fresh, naive = [], []
    for _ in range(args.rounds):
        events = names(args.events, rng)
        fresh.append(index_rate(entries, events))
        naive.append(naive_rate(compiled, events[: max(1, args.events // 20)]))
    ours, anchor = statistics.median(fresh), statistics.median(naive)
    verdict = "ok" if ours >= MATCH_TARGET else "MISSED"
    print(f"matching {args.patterns:,} patterns, medians of {args.rounds} interleaved rounds:")
    print(
        f"  PatternIndex.match   {ours:12,.0f} events/s   = {ours / anchor:,.0f}x the naive scan   "
        f"goal >= {MATCH_TARGET:,}   {verdict}"
    )
    print(f"  naive regex scan     {anchor:12,.0f} events/s")
    with tempfile.TemporaryDirectory() as tmp:
        appended, queued = anyio.run(dispatch_rate, args.dispatch, Path(tmp))
    print(
        f"end to end ({args.dispatch:,} events, SQLite synchronous=NORMAL): appended "
        f"{appended:,.0f} events/s (one transaction each, as `emit`); dispatched to queued jobs "
        f"{queued:,.0f} events/s"
    )


if __name__ == "__main__":
    sys.exit(main())
