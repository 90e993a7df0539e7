"""``events list``: the event log, newest first, read-only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopengine.commands._console import Console
from loopengine.commands._listing import listed
from loopengine.store import iso, signals

__all__ = ["run_events_list"]


def run_events_list(
    console: Console, pattern: str | None, limit: int, config: Path | None, as_json: bool
) -> int:
    rows = listed(config, pattern, limit, signals.list_events)
    views = [
        {
            "id": row["id"],
            "name": row["name"],
            "source": row["source"],
            "data": row["data"],
            "execution_id": row["execution_id"],
            "created_at": iso(row["created_at"]),
        }
        for row in rows
    ]
    if as_json:
        console.json({"events": views})
    elif not views:
        console.print("No events yet: `loopengine emit NAME --data '{...}'`.")
    else:
        table = [("id", "event", "source", "created", "data")]
        table += [
            (str(v["id"]), v["name"], v["source"], str(v["created_at"]), _short(v["data"]))
            for v in views
        ]
        console.table(table, ((), ("bold",), ("dim",), ("dim",)))
    return 0


def _short(data: Any, width: int = 60) -> str:
    text = json.dumps(data, separators=(",", ":"), default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
