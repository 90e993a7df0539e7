"""``daemon`` (run triggered loops until a signal) and ``status`` (what daemons do; read-only)."""

from __future__ import annotations

import sys
from contextlib import redirect_stderr, redirect_stdout
from functools import partial
from pathlib import Path

from loopengine._secrets import MaskedStream
from loopengine.app import daemon_status, read_now, read_settings, read_store
from loopengine.commands._console import Console, near
from loopengine.store import iso, status

__all__ = ["run_daemon_command", "run_status"]


async def run_daemon_command(
    console: Console, folder: Path | None, config: Path | None, as_json: bool
) -> int:
    """Run the daemon; what its skills and plugins print to stdout or stderr has known secrets
    masked, as its log has. The log's last lines are written however it ends."""
    from loopengine.api import run_daemon
    from loopengine.daemon import DaemonLog

    log = DaemonLog(console.out, as_json=as_json)
    with (
        MaskedStream(sys.stdout, log.write_waiting) as out,
        MaskedStream(sys.stderr, partial(log.write_waiting, flush=True)) as err,
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        try:
            return await run_daemon(config, folder, log)
        finally:
            log.flush()


def _trigger_name(trigger: status.ShownTrigger) -> str:
    return trigger.type if trigger.id == trigger.type else f"{trigger.type}:{trigger.id}"


def run_status(console: Console, config: Path | None, as_json: bool) -> int:
    settings = read_settings(config)
    with read_store(settings) as reader:
        view = read_now(reader, daemon_status(settings.config.daemon.lease_s))
    file = None if settings.file is None else str(settings.file.resolve())
    if as_json:
        console.json({"config": file, "store": settings.store, **view.as_json()})
        return 0
    console.print(f"config: {'none (defaults)' if file is None else near(file)}")
    console.print(f"store: {near(settings.store)}")
    if not view.daemons:
        console.print("No daemon is running: start one with `loopengine daemon`.")
    for daemon in view.daemons:
        console.print(
            f"daemon {daemon.id}  up since {iso(daemon.started_at)}  "
            f"heartbeat {iso(daemon.heartbeat_at)}"
        )
    if view.loops:
        table = [("loop", "trigger", "next fire", "state")]
        for loop in view.loops:
            state = "active" if loop.paused_at is None else "paused"
            for trigger in loop.triggers or (status.ShownTrigger("-", "-", None),):
                table.append(
                    (loop.loop_id, _trigger_name(trigger), iso(trigger.next_fire) or "-", state)
                )
        console.print()
        console.table(table, (("bold",), (), ("dim",), ()))
    depth = view.depth
    console.print()
    console.print(
        f"queue: {depth['queued']} queued, {depth['running']} running; "
        f"{len(view.running)} executions running"
    )
    return 0
