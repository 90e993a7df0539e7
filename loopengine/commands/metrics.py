"""``metrics record`` and ``metrics list``: the metric series that sources and threshold
triggers read, fed a point at a time and listed.

``metrics record`` writes its row without an event loop, the engine or the loop models: scripts
call it in loops, and its start-up is most of its cost.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from loopengine.app import (
    metric_series,
    open_reader,
    read_now,
    read_settings,
    record_metric,
    write_now,
)
from loopengine.commands._console import Console
from loopengine.commands._listing import name_filter
from loopengine.errors import ContractError
from loopengine.store import iso

__all__ = ["run_metric", "run_metrics_list"]


def _labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ContractError(f"--label {pair!r}: write KEY=VALUE")
        labels[key] = value
    return labels


def run_metric(
    console: Console, name: str, value: str, pairs: list[str], config: Path | None, as_json: bool
) -> int:
    try:
        number = float(value)
    except ValueError:
        raise ContractError(f"metric value {value!r} is not a number") from None
    labels = _labels(pairs)
    url = read_settings(config).database_url
    point = write_now(url, record_metric(name, number, labels))
    if as_json:
        console.json(
            {"name": name, "value": number, "labels": labels, "recorded_at": iso(point.recorded_at)}
        )
    else:
        console.print(f"recorded {name} = {number:g}")
    return 0


def run_metrics_list(
    console: Console, pattern: str | None, limit: int, config: Path | None, as_json: bool
) -> int:
    wanted = name_filter(pattern, limit)
    with open_reader(config) as reader:
        series = read_now(reader, metric_series(wanted, limit))
    if as_json:
        console.json(
            {"metrics": [{**asdict(s), "recorded_at": iso(s.recorded_at)} for s in series]}
        )
    elif not series:
        console.print("No metrics yet: `loopengine metrics record NAME VALUE`.")
    else:
        rows = [("metric", "latest", "points", "recorded")]
        rows += [(s.name, f"{s.value:g}", str(s.points), str(iso(s.recorded_at))) for s in series]
        console.table(rows, (("bold",), (), ("dim",), ("dim",)))
    return 0
