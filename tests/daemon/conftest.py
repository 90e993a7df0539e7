"""A folder with one loop per trigger type, and ``loopengine daemon`` processes running on it,
killed and waited for when the test ends, whatever its outcome."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from tests.postgres import PostgresServer, postgres_cluster
from tests.waiting import DEADLINE_S, wait_until

T = TypeVar("T")

TICK = """\
id: tick
trigger:
  type: cron
  config: {{expression: "*/2 * * * * *", catchup: {catchup}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
ON_EVENT = """\
id: on_event
trigger: {type: event, config: {event_pattern: "seo.page.*", filter: "data.page > `0`"}}
decide: {decision_tree: [], fallback_action: log_only}
"""
HOT = """\
id: hot
trigger:
  type: threshold
  config: {metric: cpu.load, operator: ">", value: 0.8, clear_value: 0.5, every: 1s}
decide: {decision_tree: [], fallback_action: log_only}
"""
BY_HAND = """\
id: by_hand
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: log_only}
"""


@dataclass
class Workspace:
    """A working directory with ``loops/`` and its own SQLite store."""

    root: Path
    env: dict[str, str]
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def database(self) -> Path:
        return self.root / "store.db"

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "loopengine", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"loopengine {' '.join(args)}: {done.stdout}{done.stderr}")
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def start(self, log: str = "daemon.log", loops: str | None = "loops") -> Daemon:
        """A daemon on ``loops`` (None: the folder its config names), logging to ``log``, once
        it says it is ready (killed if it does not); :meth:`close` kills it if it still runs
        then."""
        path = self.root / log
        before = path.stat().st_size if path.exists() else 0
        with path.open("a") as stream:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "loopengine",
                    "daemon",
                    *([loops] if loops else []),
                    "--json",
                ],
                cwd=self.root,
                env=self.env,
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        daemon = Daemon(process, path, before)
        self.daemons.append(daemon)
        try:
            daemon.wait_for(lambda line: line.get("kind") == "ready")
        except AssertionError:
            daemon.kill()
            raise
        return daemon

    def close(self) -> None:
        """Kill and wait for every daemon started here that still runs (its test failed)."""
        for daemon in self.daemons:
            daemon.kill()


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    log: Path
    offset: int = 0
    """Where this daemon's lines begin in the log (earlier daemons wrote what is before)."""
    seen: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)

    def lines(self) -> list[dict[str, Any]]:
        """This daemon's log lines, so far."""
        with self.log.open("rb") as stream:
            stream.seek(self.offset)
            data = stream.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for text in complete.decode().splitlines():
            try:
                self.seen.append(json.loads(text))
            except ValueError:
                self.seen.append({"kind": "text", "message": text})
        return list(self.seen)

    def tail(self) -> str:
        return self.log.read_text()[-3000:]

    def wait_until(
        self, condition: Callable[[], T], failure: str, timeout: float = DEADLINE_S
    ) -> T:
        """``wait_until`` that fails at once, with the log, if the daemon exits meanwhile."""

        def running() -> T:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the daemon exited ({self.process.returncode}): {self.tail()}"
                )
            return condition()

        return wait_until(
            running, lambda: f"{failure}: {self.tail()}", deadline_s=timeout, every_s=0.01
        )

    def wait_for(
        self, wanted: Callable[[dict[str, Any]], bool], timeout: float = DEADLINE_S, count: int = 1
    ) -> dict[str, Any]:
        """The ``count``-th line ``wanted`` accepts, once the daemon has logged it."""

        def logged() -> dict[str, Any] | None:
            found = [line for line in self.lines() if wanted(line)]
            return found[count - 1] if len(found) >= count else None

        return self.wait_until(logged, "not logged", timeout)

    def stop(self, how: int = signal.SIGTERM, timeout: float = DEADLINE_S) -> int:
        """Its exit code once ``how`` has stopped it; killed if it has not within ``timeout``."""
        self.process.send_signal(how)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the daemon did not exit on {signal.Signals(how).name}: {self.tail()}"
            ) from None

    def kill(self) -> int:
        """SIGKILL unless it has exited; its exit code, once waited for."""
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


@contextmanager
def serving(
    root: Path, loops: dict[str, str], token: str | None
) -> Iterator[tuple[Workspace, str]]:
    """A daemon in ``root`` on the ``loops`` (file name: text), with ``token`` when given (as
    ``${ secret.API_TOKEN }``), stopped when the block ends; its workspace and API URL."""
    (root / "loops").mkdir()
    for name, text in loops.items():
        (root / "loops" / name).write_text(text)
    settings = ', token: "${ secret.API_TOKEN }"' if token else ""
    (root / "loopengine.yaml").write_text(f"daemon: {{port: 0{settings}}}\n")
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    env["API_TOKEN"] = token or ""
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    workspace = Workspace(root, env)
    daemon = workspace.start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    try:
        yield workspace, str(ready["api"])
    finally:
        assert daemon.stop() == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    loops = tmp_path / "loops"
    loops.mkdir()
    (tmp_path / "loopengine.yaml").write_text("daemon: {port: 0}\n")
    env = {
        **os.environ,
        "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}",
        "NO_COLOR": "1",
    }
    env.pop("LOOPENGINE_CONFIG", None)
    workspace = Workspace(tmp_path, env)
    yield workspace
    workspace.close()


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with postgres_cluster() as started:
        yield started


@pytest.fixture
def on_postgres(workspace: Workspace, server: PostgresServer) -> Iterator[Workspace]:
    """The workspace on the module's private PostgreSQL server, its schema dropped afterwards."""
    workspace.env["LOOPENGINE_DATABASE"] = server.url
    yield workspace
    engine = sa.create_engine(server.url)
    with engine.begin() as connection:
        connection.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
