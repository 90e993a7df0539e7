"""An engine on a real SQLite store in a temporary folder, with the test skills registered."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.engine import Engine, ExecutionDone, Services
from loopengine.skills import Registry
from loopengine.store import Store, executions
from tests.engine import skills_for_tests


@pytest.fixture(scope="session")
def engine_registry() -> Registry:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    return registry


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    skills_for_tests.CALLS.clear()
    skills_for_tests.FAILURES.clear()


@dataclass
class Harness:
    """A store, an engine, and helpers to load loops from text and read execution records."""

    tmp: Path
    registry: Registry
    store: Store
    engine: Engine
    config: Config

    def loop(self, text: str, name: str = "loop.yaml") -> Loop:
        path = self.tmp / name
        path.write_text(textwrap.dedent(text))
        report = LoopLoader(Env(self.registry, frozenset(self.config.storage))).load_file(path)
        assert report.ok, [d.format() for d in report.diagnostics]
        assert report.loop is not None
        return report.loop

    async def view(self, done: ExecutionDone) -> dict[str, Any]:
        record = await self.store.read(lambda c: executions.read_record(c, done.execution_id))
        assert record is not None
        return record.view()

    def phase(self, view: dict[str, Any], name: str) -> dict[str, Any]:
        return next(p for p in view["phases"] if p["phase"] == name)

    def load_loop(self, path: str) -> Loop:
        report = LoopLoader(Env(self.registry, frozenset(self.config.storage))).load_file(
            Path(path)
        )
        assert report.loop is not None
        return report.loop


@asynccontextmanager
async def open_harness(
    tmp: Path, registry: Registry, config: Config | None = None, **services: Any
) -> AsyncIterator[Harness]:
    config = config or Config()
    async with Store.open(f"sqlite:///{tmp / 'loopengine.db'}") as store:
        built = Services(registry, store, config, tmp, retry_base_s=0.001, **services)
        try:
            yield Harness(tmp, registry, store, Engine(built), config)
        finally:
            await built.aclose()


@pytest.fixture
async def harness(tmp_path: Path, engine_registry: Registry) -> AsyncIterator[Harness]:
    async with open_harness(tmp_path, engine_registry) as opened:
        yield opened


HarnessFactory = Callable[..., Any]


def interrupt_after_decide(connection: sa.Connection, execution_id: str) -> None:
    """Leave ``execution_id`` as a crash right after its decide phase leaves it: its first
    three phases committed, its status ``interrupted``."""
    kept = executions.phases_of(connection, execution_id)[:3]
    connection.execute(sa.text("DELETE FROM phases WHERE execution_id = :id"), {"id": execution_id})
    executions.insert_phases(connection, execution_id, executions.PhaseRows.of(3, kept))
    executions.update_execution(
        connection, execution_id, status="interrupted", outcome="interrupted"
    )
