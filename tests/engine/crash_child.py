"""Forks, for each ``run`` line on stdin, a child that runs executions back to back and prints
each durable commit; the crash test kills each child with -9. The children are forked from one
process that has imported everything, so that a kill costs no interpreter start.

python -m tests.engine.crash_child DATABASE_PATH LOOP_PATH

Prints ``ready PID`` once a child has opened the store, ``ack EXECUTION WHAT`` per commit, and
``dead CODE`` (-9 once killed) when it has died.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import anyio

from loopengine.builtins import builtin_registry
from loopengine.contract import Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.engine import Engine, Services
from loopengine.skills import Registry
from loopengine.store import Store
from tests.engine import skills_for_tests


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _acknowledge(execution_id: str, what: str) -> None:
    _say(f"ack {execution_id} {what}")


async def _run_forever(registry: Registry, loop: Loop, database: str) -> None:
    async with Store.open(f"sqlite:///{database}") as store:
        services = Services(registry, store, base=Path(database).parent)
        engine = Engine(services, on_commit=_acknowledge)
        _say(f"ready {os.getpid()}")
        while True:
            await engine.run(loop)
            skills_for_tests.CALLS.clear()


def _child(registry: Registry, loop: Loop, database: str) -> None:
    try:
        anyio.run(_run_forever, registry, loop, database)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(1)


def main(database: str, loop_path: str) -> None:
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    report = LoopLoader(Env(registry)).load_file(Path(loop_path))
    assert report.loop is not None, [d.format() for d in report.diagnostics]
    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            _child(registry, report.loop, database)
        _, status = os.waitpid(pid, 0)
        _say(f"dead {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
