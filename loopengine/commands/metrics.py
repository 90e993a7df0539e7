"""``metrics list``: the metric series that sources and threshold triggers read, read-only."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from loopengine.commands._console import Console
from loopengine.errors import ContractError
from loopengine.reader import open_reader
from loopengine.store import iso, signals

__all__ = ["run_metrics_list"]


async def run_metrics_list(
    console: Console, pattern: str | None, limit: int, config: Path | None, as_json: bool
) -> int:
    if limit < 1:
        raise ContractError(f"--limit {limit}: write a whole number ≥ 1")

    def wanted(name: str) -> bool:
        return pattern is None or fnmatchcase(name, pattern)

    async with open_reader(config) as store:
        series = (
            []
            if store is None
            else await store.read(lambda c: signals.metric_series(c, wanted, limit))
        )
    if as_json:
        console.json({"metrics": [{**s, "recorded_at": iso(s["recorded_at"])} for s in series]})
    elif not series:
        console.print("No metrics yet: `loopengine metrics record NAME VALUE`.")
    else:
        rows = [("metric", "latest", "points", "recorded")]
        rows += [
            (s["name"], f"{s['value']:g}", str(s["points"]), str(iso(s["recorded_at"])))
            for s in series
        ]
        console.table(rows, (("bold",), (), ("dim",), ("dim",)))
    return 0
