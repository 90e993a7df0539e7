"""Runs executions back to back and prints each durable commit; the crash test kills it with -9.

python -m tests.engine.crash_child DATABASE_PATH LOOP_PATH
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from loopengine.contract import LoopLoader
from loopengine.contract.checks import Env
from loopengine.engine import Engine, Services
from loopengine.skills.builtin import builtin_registry
from loopengine.store import Store
from tests.engine import skills_for_tests


def _acknowledge(execution_id: str, what: str) -> None:
    sys.stdout.write(f"ack {execution_id} {what}\n")
    sys.stdout.flush()


async def main(database: str, loop_path: str) -> None:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    report = LoopLoader(Env(registry)).load_file(Path(loop_path))
    assert report.loop is not None, [d.format() for d in report.diagnostics]
    async with Store.open(f"sqlite:///{database}") as store:
        services = Services(registry, store, base=Path(database).parent)
        engine = Engine(services, on_commit=_acknowledge)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while True:
            await engine.run(report.loop)
            skills_for_tests.CALLS.clear()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
