"""What the run-time commands share: workspace, store, engine, and loading loops by path."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from loopengine.contract import Loop, LoopLoader
from loopengine.engine import Engine, PhaseListener, Services, escalate_overdue, recover_interrupted
from loopengine.errors import ContractError
from loopengine.skills import Progress
from loopengine.store import DATABASE_ENV, Store
from loopengine.workspace import Workspace, load_workspace

__all__ = ["Runtime", "database_url", "open_runtime"]


def database_url(workspace: Workspace) -> str:
    """``$LOOPENGINE_DATABASE``, else the config's; a relative SQLite path starts at the config."""
    url = os.environ.get(DATABASE_ENV) or workspace.config.database
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        path = Path(parsed.database).expanduser()
        if not path.is_absolute():
            return parsed.set(database=str(workspace.base / path)).render_as_string(
                hide_password=False
            )
    return url


@dataclass(frozen=True, slots=True)
class Runtime:
    workspace: Workspace
    store: Store
    engine: Engine
    loader: LoopLoader

    def load_loop(self, path: str) -> Loop:
        """The loop in ``path``, or ``ContractError`` with every diagnostic."""
        report = self.loader.load_file(Path(path))
        if report.loop is None or not report.ok:
            problems = report.errors
            raise ContractError(problems[0].format() if problems else f"{path}: invalid", problems)
        return report.loop


@asynccontextmanager
async def open_runtime(
    config: Path | None,
    listener: PhaseListener | None = None,
    progress: Progress | None = None,
) -> AsyncIterator[Runtime]:
    """Open the store, recover executions a dead process left, escalate overdue approvals."""
    workspace = load_workspace(config)
    store = await Store.open(database_url(workspace))
    services = Services(
        workspace.registry, store, workspace.config, workspace.base, progress=progress
    )
    runtime = Runtime(workspace, store, Engine(services, listener), LoopLoader(workspace.env))
    try:
        await recover_interrupted(runtime.engine)
        await escalate_overdue(runtime.engine, runtime.load_loop)
        yield runtime
    finally:
        await services.aclose()
        await store.close()
