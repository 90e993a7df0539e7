"""``loopengine daemon`` with its HTTP API: the daemon's parts composed over one runtime, served
until SIGINT or SIGTERM; then intake stops, running executions finish within ``grace_s`` and the
others are left to be resumed.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import anyio

from loopengine._secrets import remember
from loopengine.api._access import bind_problem
from loopengine.app import open_runtime
from loopengine.daemon import Daemon, DaemonLog, Signals, supervised, wait_out_outages
from loopengine.errors import ContractError
from loopengine.expr import compile_template

__all__ = ["TOKEN_ENV", "run_daemon"]

TOKEN_ENV = "LOOPENGINE_API_TOKEN"


def _api_token(configured: str | None) -> str | None:
    """``$LOOPENGINE_API_TOKEN``, else ``daemon.token`` (its ``${ secret.NAME }`` read now)."""
    if from_env := os.environ.get(TOKEN_ENV):
        remember(from_env)
        return from_env
    if not configured:
        return None
    token = compile_template(configured).render({}, os.environ)
    return str(token) if token else None


async def run_daemon(config: Path | None, folder: Path | None, log: DaemonLog) -> int:
    """Run until SIGINT or SIGTERM; 0 once stopped cleanly."""
    from loopengine.api._app import create_app  # FastAPI: the daemon's only
    from loopengine.api._context import ApiContext
    from loopengine.api._prometheus import DaemonMetrics
    from loopengine.api._server import ApiServer, listening_socket

    metrics = DaemonMetrics()
    log.observers.append(metrics.observe)
    async with open_runtime(config, metrics.phase) as runtime:
        metrics.watch(runtime.engine.services.llm)
        settings = runtime.workspace.config.daemon
        wait_out_outages(runtime, settings.store_outage_s, log)
        folder = folder or runtime.workspace.base / settings.loops
        if not folder.is_dir():
            raise ContractError(
                f"{folder}: no such folder of loops; give one (loopengine daemon LOOPS_DIR) "
                "or set daemon.loops in loopengine.yaml"
            )
        token = _api_token(settings.token)
        if problem := bind_problem(settings.host, token):
            raise ContractError(problem)
        bound = listening_socket(settings.host, settings.port)
        daemon = Daemon(runtime, folder, log)
        await daemon.release_dead()
        await daemon.rescan()
        context = ApiContext(
            runtime.store,
            daemon.owner,
            settings.lease_s,
            token,
            daemon.dispatcher.matching,
            daemon.folder.loops.get,
            runtime,
            log,
            hook=daemon.hooks.route,
            metrics=metrics,
        )
        runtime.engine.on_commit = context.changes.committed
        server = ApiServer(create_app(context), bound, settings)
        signals = Signals()
        async with anyio.create_task_group() as group:
            group.start_soon(server.run_bound)
            while not server.started:
                await anyio.sleep(0.01)
            log.line(
                "ready",
                f"{len(daemon.folder.loops)} loops from {folder}",
                daemon=daemon.owner,
                workers=settings.workers,
                api=server.url,
            )
            group.start_soon(signals.receive)
            group.start_soon(daemon.workers.run)
            group.start_soon(supervised, log, daemon.heartbeat)
            async with anyio.create_task_group() as intake:
                for task in (
                    daemon.scheduler.run,
                    daemon.dispatcher.run,
                    daemon.thresholds.run,
                    daemon.reload,
                    daemon.timers,
                    daemon.wakeups.run,
                    partial(context.changes.watch, runtime.store),
                ):
                    intake.start_soon(supervised, log, task)
                for reader in daemon.streams:
                    intake.start_soon(supervised, log, reader.run)
                await signals.first.wait()
                server.should_exit = True
                context.changes.close()
                intake.cancel_scope.cancel()
            running = len(daemon.workers.running)
            log.line(
                "stop",
                f"{signals.name}: intake stopped, {running} executions running",
                grace_s=settings.grace_s,
            )
            if not await daemon.workers.drain(settings.grace_s, signals.second):
                left = len(daemon.workers.running)
                log.line("stop", f"{left} executions left to resume after the grace period")
                runtime.engine.abandon()
                runtime.store.outage_s = 0.0
            group.cancel_scope.cancel()
        await daemon.hand_back()
        log.line("exit", daemon=daemon.owner)
    return 0
