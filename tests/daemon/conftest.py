"""A folder with one loop per trigger type, and a ``loopengine daemon`` process running on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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
            timeout=60,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"loopengine {' '.join(args)}: {done.stdout}{done.stderr}")
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def start(self, log: str = "daemon.log") -> Daemon:
        path = self.root / log
        before = len(path.read_text().splitlines()) if path.exists() else 0
        with path.open("a") as stream:
            process = subprocess.Popen(
                [sys.executable, "-m", "loopengine", "daemon", "loops", "--json"],
                cwd=self.root,
                env=self.env,
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        daemon = Daemon(process, path, before)
        daemon.wait_for(lambda line: line.get("kind") == "ready")
        return daemon


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    log: Path
    skip: int = 0
    """Lines of the log written by earlier daemons."""

    def lines(self) -> list[dict[str, Any]]:
        """This daemon's log lines."""
        found = []
        for text in self.log.read_text().splitlines()[self.skip :]:
            try:
                found.append(json.loads(text))
            except ValueError:
                found.append({"kind": "text", "message": text})
        return found

    def wait_for(self, wanted: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines():
                if wanted(line):
                    return line
            if self.process.poll() is not None:
                raise AssertionError(f"the daemon exited: {self.log.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"not logged within {timeout} s: {self.log.read_text()[-3000:]}")

    def stop(self, how: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        self.process.send_signal(how)
        return self.process.wait(timeout)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    loops = tmp_path / "loops"
    loops.mkdir()
    (tmp_path / "loopengine.yaml").write_text("daemon: {port: 0}\n")
    env = {
        **os.environ,
        "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}",
        "NO_COLOR": "1",
    }
    env.pop("LOOPENGINE_CONFIG", None)
    return Workspace(tmp_path, env)
