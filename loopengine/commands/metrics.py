"""``metrics list``: the metric series that sources and threshold triggers read, read-only."""

from __future__ import annotations

from pathlib import Path

from loopengine.commands._console import Console
from loopengine.commands._listing import listed
from loopengine.store import iso, signals

__all__ = ["run_metrics_list"]


def run_metrics_list(
    console: Console, pattern: str | None, limit: int, config: Path | None, as_json: bool
) -> int:
    series = listed(config, pattern, limit, signals.metric_series)
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
