"""What the run-time commands share: workspace, store, engine, and loading loops by path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopengine._startup import settle
from loopengine.app._reader import read_store
from loopengine.app._workspace import Workspace, load_workspace
from loopengine.contract import Loop, LoopLoader
from loopengine.engine import Engine, PhaseListener, Services, escalate_overdue, recover_interrupted
from loopengine.skills import Progress
from loopengine.store import Store

__all__ = ["Runtime", "listening", "open_runtime"]

_LISTENER: ContextVar[Progress | None] = ContextVar("loopengine_listener", default=None)


@dataclass(frozen=True, slots=True)
class Runtime:
    workspace: Workspace
    store: Store
    engine: Engine
    loader: LoopLoader

    def load_loop(self, path: str) -> Loop:
        """The loop in ``path``, or ``ContractError`` with every diagnostic."""
        return self.loader.load_file(Path(path)).valid()


@contextmanager
def listening(progress: Progress | None) -> Iterator[None]:
    """Within the block, what the skills of executions this task runs report goes to ``progress``
    too: one caller follows its own execution while others run on the same engine."""
    token = _LISTENER.set(progress)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def _relay(fixed: Progress | None) -> Progress:
    """Tells ``fixed`` (the whole runtime's) and the current task's listener each event."""

    def progress(event: str, fields: Mapping[str, Any]) -> None:
        if fixed is not None:
            fixed(event, fields)
        if (listener := _LISTENER.get()) is not None:
            listener(event, fields)

    return progress


@asynccontextmanager
async def open_runtime(
    config: Path | None,
    listener: PhaseListener | None = None,
    progress: Progress | None = None,
    *,
    create: bool = True,
) -> AsyncIterator[Runtime]:
    """Open the store (without ``create``, ``ContractError`` when there is none: only the
    commands that run loops or feed them make one), recover executions a dead process left,
    escalate overdue approvals; spans are exported meanwhile when the settings ask for them."""
    workspace = load_workspace(config)
    if not create:
        with read_store(workspace.settings):
            pass
    with workspace.settings.traced():
        async with Store.open(workspace.settings.database_url) as store:
            services = Services(
                workspace.registry,
                store,
                workspace.config,
                workspace.base,
                progress=_relay(progress),
                private=workspace.settings.private,
            )
            runtime = Runtime(
                workspace, store, Engine(services, listener), LoopLoader(workspace.env)
            )
            settle()
            try:
                await recover_interrupted(runtime.engine)
                await escalate_overdue(runtime.engine, runtime.load_loop)
                yield runtime
            finally:
                await services.aclose()
