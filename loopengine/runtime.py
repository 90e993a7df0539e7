"""What the run-time commands share: workspace, store, engine, and loading loops by path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from loopengine._startup import settle
from loopengine.contract import Loop, LoopLoader
from loopengine.engine import Engine, PhaseListener, Services, escalate_overdue, recover_interrupted
from loopengine.skills import Progress
from loopengine.store import Store
from loopengine.workspace import Workspace, load_workspace

__all__ = ["Runtime", "open_runtime"]


@dataclass(frozen=True, slots=True)
class Runtime:
    workspace: Workspace
    store: Store
    engine: Engine
    loader: LoopLoader

    def load_loop(self, path: str) -> Loop:
        """The loop in ``path``, or ``ContractError`` with every diagnostic."""
        return self.loader.load_file(Path(path)).valid()


@asynccontextmanager
async def open_runtime(
    config: Path | None,
    listener: PhaseListener | None = None,
    progress: Progress | None = None,
) -> AsyncIterator[Runtime]:
    """Open the store, recover executions a dead process left, escalate overdue approvals."""
    workspace = load_workspace(config)
    async with Store.open(workspace.settings.database_url) as store:
        services = Services(
            workspace.registry, store, workspace.config, workspace.base, progress=progress
        )
        runtime = Runtime(workspace, store, Engine(services, listener), LoopLoader(workspace.env))
        settle()
        try:
            await recover_interrupted(runtime.engine)
            await escalate_overdue(runtime.engine, runtime.load_loop)
            yield runtime
        finally:
            await services.aclose()
