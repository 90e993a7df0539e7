"""``loopengine daemon``: load a folder of loops, fire their triggers, run the queue until a
signal; then stop intake, let running executions finish within ``grace_s`` and leave the others
to be resumed.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from loopengine._faults import describe, next_pause
from loopengine._resources import shipped_loop
from loopengine.app import Runtime
from loopengine.contract import Config, Loop
from loopengine.daemon._dispatcher import Dispatcher
from loopengine.daemon._hooks import HookTable
from loopengine.daemon._log import DaemonLog
from loopengine.daemon._loops import Changes, LoopFolder, reason, triggers_of
from loopengine.daemon._scheduler import Scheduler
from loopengine.daemon._streams import StreamReader
from loopengine.daemon._thresholds import ThresholdWatcher
from loopengine.daemon._wakeups import Wakeups
from loopengine.daemon._workers import Workers
from loopengine.engine import escalate_overdue, owner_died
from loopengine.errors import LoopEngineError, StoreUnavailable
from loopengine.store import Artifact, history, new_id, queue
from loopengine.store.wakeups import EVENT, JOB, METRIC

__all__ = ["PRUNE_S", "RELOAD_S", "TIMERS_S", "Daemon", "Signals", "supervised", "wait_out_outages"]

RELOAD_S = 1.0
"""How often the loops folder is scanned for edits when it cannot be watched."""
RESCAN_S = 30.0
"""How often the watched loops folder is scanned all the same, for a change its file system
does not report (some network mounts)."""
TIMERS_S = 5.0
"""How often approval deadlines are checked."""
PRUNE_S = 300.0
"""How often what is past its retention is pruned."""
PRUNE_BATCH = 500
"""Most artifacts removed in one go (a backlog goes on in the next)."""
RELEASE_S = 5.0
"""How long a stopping daemon tries to hand its jobs back (out of reach, their leases lapse)."""
SCAN_BATCH = 256
"""Most loop files loaded before they are scheduled: a daemon starting with thousands of files
holds that many definitions at once, not all of them."""


def _shipped_fallbacks(config: Config) -> tuple[Path, ...]:
    """The shipped autolearn loops the daemon schedules beside its folder's (``daemon.autolearn``,
    with a cluster to learn about)."""
    from loopengine.autolearn import AUTOLEARN_LOOPS

    if not (config.daemon.autolearn and config.cluster.nodes):
        return ()
    return tuple(path for name in AUTOLEARN_LOOPS if (path := shipped_loop(name)) is not None)


class Daemon:
    """One daemon's parts over a runtime (loop folder, workers, scheduler, dispatcher, threshold
    watcher, hook table, stream readers, wake-ups) and the chores they share; ``api.run_daemon``
    serves them."""

    def __init__(self, runtime: Runtime, folder: Path, log: DaemonLog) -> None:
        settings = runtime.workspace.config.daemon
        self.runtime = runtime
        self.store = runtime.store
        self.log = log
        self.settings = settings
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_id()[:8]}"
        self.started_at = time.time()
        self.folder = LoopFolder(
            folder, runtime.loader, log, fallbacks=_shipped_fallbacks(runtime.workspace.config)
        )
        self.wakeups = Wakeups(self.store, log, settings.poll_s)
        self.workers = Workers(
            runtime.engine,
            self.folder.loops,
            runtime.load_loop,
            log,
            owner=self.owner,
            count=settings.workers,
            lease_s=settings.lease_s,
            poll_s=settings.poll_s,
            period=self.wakeups.period,
        )
        wake = self.workers.wake
        self.scheduler = Scheduler(self.store, log, wake)
        self.dispatcher = Dispatcher(
            self.store, log, wake, settings.poll_s, period=self.wakeups.period
        )
        self.thresholds = ThresholdWatcher(
            self.store, log, wake, settings.poll_s, period=self.wakeups.period
        )
        self.wakeups.handlers = {
            JOB: wake,
            EVENT: self.dispatcher.nudge,
            METRIC: self.thresholds.nudge,
        }
        self.hooks = HookTable(log)
        self.streams = [
            StreamReader(
                source,
                source.consumer or socket.gethostname(),
                self.store,
                log,
                self.dispatcher.nudge,
            )
            for source in runtime.workspace.config.events.sources
        ]

    async def apply(self, changes: Changes) -> None:
        """Schedule what a scan changed. A loop that fails to schedule is refused alone: the
        version it replaced (if any) goes on, and every other change of the scan applies."""
        try:
            await self._schedule(changes.loaded, changes.removed)
            loaded = list(changes.loaded)
        except Exception:  # one loop at a time, to find which
            loaded = [loop for loop in changes.loaded if await self._alone(loop, changes)]
            await self._schedule((), changes.removed)
        for loop in loaded:
            kinds = ",".join(sorted({trigger.type for _, trigger in triggers_of(loop)})) or "none"
            self.log.line("load", loop=loop.id, file=loop.file, triggers=kinds)
        for loop_id in changes.removed:
            self.log.line("unload", "file deleted: unscheduled", loop=loop_id)

    async def _schedule(self, loaded: Sequence[Loop], removed: Sequence[str]) -> None:
        await self.scheduler.update(loaded, removed)
        self.dispatcher.update(loaded, removed)
        await self.thresholds.update(loaded, removed)
        self.hooks.update(loaded, removed)

    async def _alone(self, loop: Loop, changes: Changes) -> bool:
        """Schedule ``loop`` alone; when that fails, refuse it (with a log line) and schedule the
        version it replaced again, or nothing under its id."""
        previous = changes.previous.get(loop.id)
        try:
            await self._schedule((loop,), ())
        except Exception as exc:
            self.folder.refuse(loop, previous)
            kept = " (the previous version keeps running)" if previous else ""
            message = f"cannot schedule: {reason(exc)}; not scheduled{kept}"
            self.log.line("error", message, loop=loop.id, file=loop.file)
            await self._schedule((previous,) if previous else (), () if previous else (loop.id,))
            return False
        return True

    async def reload(self) -> None:
        """Scan the loops folder when the file watcher reports a change in it (an idle scan of a
        thousand files each second took most of an idle daemon's CPU), once it watches (for what
        changed before), and every ``RESCAN_S`` regardless; a folder that cannot be watched (no
        inotify watch left) is scanned every ``RELOAD_S`` instead, as it says once."""
        from watchfiles import awatch

        scanned: float | None = None
        try:
            async for changed in awatch(
                self.folder.folder,
                debounce=50,
                rust_timeout=int(RELOAD_S * 1000),
                yield_on_timeout=True,
            ):
                if changed or scanned is None or time.monotonic() - scanned >= RESCAN_S:
                    scanned = time.monotonic()
                    await self.rescan()
        except (OSError, RuntimeError) as exc:
            self.log.line(
                "error",
                f"cannot watch the loops folder ({reason(exc)}): scanning it every {RELOAD_S:g} s",
                folder=str(self.folder.folder),
            )
        while True:
            await anyio.sleep(RELOAD_S)
            await self.rescan()

    async def rescan(self) -> None:
        """Load and schedule what changed in the loops folder, ``SCAN_BATCH`` files at a time."""
        while True:
            changes = self.folder.scan(SCAN_BATCH)
            if changes:
                await self.apply(changes)
            if not changes.more:
                return

    async def timers(self) -> None:
        """Approval deadlines and the sweep of ended jobs every ``TIMERS_S``; retention every
        ``PRUNE_S`` (from the start)."""
        pruned = 0.0
        while True:
            for execution_id in await escalate_overdue(self.runtime.engine, self.runtime.load_loop):
                self.log.line("escalate", "approval window closed", execution=execution_id)
            await self.sweep()
            if time.monotonic() - pruned >= PRUNE_S or not pruned:
                await self.prune()
                pruned = time.monotonic()
            await anyio.sleep(TIMERS_S)

    async def sweep(self) -> None:
        """Move the jobs that ended ``history.AFTER_S`` ago out of the queue, a batch at a time;
        a sweep that fails is logged and tried again at the next tick (other daemons sweep too)."""
        try:
            before = time.time() - history.AFTER_S
            while await self.store.write(history.sweep, before, history.BATCH) == history.BATCH:
                pass
        except Exception as exc:
            said = f"cannot move ended jobs to history: {reason(exc)}"
            self.log.line("error", f"{said}; tried again in {TIMERS_S:g} s")

    async def prune(self) -> None:
        """Forget what is past its retention: artifacts (``retention_days``), and a loop's
        executions, jobs and slots (``store.retention_days``)."""
        now = time.time()
        await self._prune_artifacts(now)
        for loop in list(self.folder.loops.records.values()):
            if loop.retention_days is None:
                continue
            before = now - loop.retention_days * 86_400
            removed = await self.store.write(queue.prune_loop, loop.id, before)
            if removed:
                self.log.line("prune", f"{removed} executions past retention", loop=loop.id)

    async def _prune_artifacts(self, now: float) -> None:
        """Remove expired artifacts from their storages, ``PRUNE_BATCH`` at a time, then from
        the index; one a storage cannot remove stays indexed, passed over until the next prune."""
        kept = 0
        while True:
            batch = await self.store.read(queue.expired_artifacts, now, PRUNE_BATCH, kept)
            removed = [artifact for artifact in batch if await self._removed(artifact)]
            if removed:
                await self.store.write(queue.forget_artifacts, removed)
            kept += len(batch) - len(removed)
            if len(batch) < PRUNE_BATCH:
                return

    async def _removed(self, artifact: Artifact) -> bool:
        """Whether ``artifact``'s storage no longer holds it (logged either way)."""
        writer = self.runtime.engine.services.artifacts
        try:
            await anyio.to_thread.run_sync(writer.remove, artifact.storage, artifact.location)
        except Exception as exc:  # one artifact that cannot be removed holds back no other
            said = f"cannot prune: {reason(exc)}; tried again in {PRUNE_S:g} s"
            self.log.line("error", said, loop=artifact.loop_id, artifact=artifact.name)
            return False
        self.log.line("prune", loop=artifact.loop_id, artifact=artifact.name)
        return True

    def status_row(self) -> queue.Daemon:
        fires = self.scheduler.next_fires(time.time() + self.settings.lease_s)
        loops = tuple(
            queue.Served(
                loop.id,
                loop.file,
                tuple(
                    queue.Slots(trigger_id, kind, tuple(fires.get((loop.id, trigger_id), ())))
                    for trigger_id, kind in loop.triggers
                ),
            )
            for loop in self.folder.loops.records.values()
        )
        return queue.Daemon(
            self.owner, socket.gethostname(), os.getpid(), self.started_at, time.time(), None, loops
        )

    async def heartbeat(self) -> None:
        """Save this daemon's row every ``lease_s / 3``: whole when its loops or their next fires
        changed, else its heartbeat alone (a thousand loops' JSON, written each time, was most
        of an idle daemon's work)."""
        saved: tuple[queue.Served, ...] | None = None
        while True:
            row = self.status_row()
            if row.loops == saved:
                await self.store.write(queue.beat, self.owner, row.heartbeat_at)
            else:
                await self.store.write(queue.save_daemon, row)
                saved = row.loops
            await anyio.sleep(self.settings.lease_s / 3)

    async def hand_back(self) -> None:
        """On the way out: this daemon's running jobs are claimed again at once, and its row says
        it stopped (tried for ``RELEASE_S``: a store out of reach lets the leases lapse)."""
        self.store.outage_s = 0.0
        try:
            with anyio.move_on_after(RELEASE_S):
                await self.store.write(queue.hand_back, self.owner, time.time())
        except StoreUnavailable as exc:
            self.log.line(
                "stop", f"{exc}: this daemon's jobs are claimed again once their leases lapse"
            )

    async def release_dead(self) -> None:
        """Free the jobs of daemons that died on this host: they are claimed again at once."""
        dead = [owner for owner in await self.store.read(queue.running_owners) if owner_died(owner)]
        if dead:
            await self.store.write(queue.release_owners, dead)
        for owner in dead:
            self.log.line("recover", "a dead daemon's jobs are claimed again", owner=owner)


class Signals:
    """SIGINT/SIGTERM: the first stops intake and starts the grace period; a second ends the
    grace period at once (running executions are left to be resumed)."""

    def __init__(self) -> None:
        self.first = anyio.Event()
        self.second = anyio.Event()
        self.name = ""

    async def receive(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for number in received:
                if self.first.is_set():
                    self.second.set()
                    return
                self.name = signal.Signals(number).name
                self.first.set()


async def supervised(log: DaemonLog, task: Callable[[], Awaitable[None]]) -> None:
    """Run ``task`` for as long as the daemon runs: a failure (the store unreachable, a bug in a
    loop's expression, a bug of loopengine's own) is logged and the task starts again, a second
    later, then up to ``BACKOFF_MAX_S`` later while it keeps failing at once."""
    pause = next_pause(None)
    while True:
        started = time.monotonic()
        try:
            await task()
        except Exception as exc:
            text = str(exc) if isinstance(exc, LoopEngineError) else describe(exc)
            name = getattr(task, "__name__", "task")
            log.line("error", f"{text}; retrying in {pause:g} s", task=name)
        await anyio.sleep(pause)
        failing_fast = time.monotonic() - started < 2 * pause
        pause = next_pause(pause) if failing_fast else next_pause(None)


def wait_out_outages(runtime: Runtime, outage_s: float, log: DaemonLog) -> None:
    """Let the store wait out a database outage for up to ``outage_s``, saying so once when it
    starts and once when it ends."""

    def told(error: StoreUnavailable | None) -> None:
        if error is not None:
            log.line("store", f"{error}: waiting for it (up to {outage_s:g} s, then retrying)")
        else:
            log.line("store", "the database answers again")

    runtime.store.outage_s = outage_s
    runtime.store.on_outage = told
