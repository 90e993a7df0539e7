"""``daemon`` (run triggered loops until a signal) and ``status`` (what daemons do; read-only)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from loopengine.commands._console import Console
from loopengine.reader import open_reader
from loopengine.settings import read_settings
from loopengine.store import executions, iso, queue

__all__ = ["run_daemon_command", "run_status"]


async def run_daemon_command(
    console: Console, folder: Path | None, config: Path | None, as_json: bool
) -> int:
    from loopengine.daemon import DaemonLog, run_daemon

    return await run_daemon(config, folder, DaemonLog(console.out, as_json=as_json))


def _status_view(rows: dict[str, Any]) -> dict[str, Any]:
    paused = rows["paused"]
    loops: dict[str, dict[str, Any]] = {}
    for daemon in rows["daemons"]:
        for loop in daemon["loops"]:
            loops.setdefault(loop["loop_id"], loop)
    return {
        "daemons": [
            {
                "id": d["id"],
                "host": d["host"],
                "pid": d["pid"],
                "started_at": iso(d["started_at"]),
                "heartbeat_at": iso(d["heartbeat_at"]),
            }
            for d in rows["daemons"]
        ],
        "loops": [
            {**loop, "paused": loop_id in paused, "paused_at": iso(paused.get(loop_id))}
            for loop_id, loop in sorted(loops.items())
        ],
        "running": [
            {
                "execution_id": row.id,
                "loop_id": row.loop_id,
                "started_at": iso(row.started_at),
                "last_phase": row.last_phase,
            }
            for row in rows["running"]
        ],
        "queue": rows["queue"],
    }


def _trigger_name(trigger: dict[str, Any]) -> str:
    same = trigger["id"] == trigger["type"]
    return str(trigger["type"]) if same else f"{trigger['type']}:{trigger['id']}"


def run_status(console: Console, config: Path | None, as_json: bool) -> int:
    lease_s = read_settings(config).config.daemon.lease_s
    empty: dict[str, Any] = {
        "daemons": [],
        "paused": {},
        "running": [],
        "queue": {"queued": 0, "running": 0},
    }
    with open_reader(config) as reader:
        if reader is None:
            rows = empty
        else:
            since = time.time() - lease_s
            rows = reader.read(
                lambda c: {
                    "daemons": queue.active_daemons(c, since),
                    "paused": queue.paused(c),
                    "running": executions.running_executions(c),
                    "queue": queue.queue_depth(c),
                }
            )
    view = _status_view(rows)
    if as_json:
        console.json(view)
        return 0
    if not view["daemons"]:
        console.print("No daemon is running: start one with `loopengine daemon`.")
    for daemon in view["daemons"]:
        console.print(
            f"daemon {daemon['id']}  up since {daemon['started_at']}  "
            f"heartbeat {daemon['heartbeat_at']}"
        )
    if view["loops"]:
        table = [("loop", "trigger", "next fire", "state")]
        for loop in view["loops"]:
            state = "paused" if loop["paused"] else "active"
            for trigger in loop["triggers"] or [{"id": "-", "type": "-", "next_fire": None}]:
                table.append(
                    (
                        loop["loop_id"],
                        _trigger_name(trigger),
                        str(trigger["next_fire"] or "-"),
                        state,
                    )
                )
        console.print()
        console.table(table, (("bold",), (), ("dim",), ()))
    depth = view["queue"]
    console.print()
    console.print(
        f"queue: {depth['queued']} queued, {depth['running']} running; "
        f"{len(view['running'])} executions running"
    )
    return 0
