"""What the daemon benches share: a workspace of loop files, a ``loopengine daemon`` process on
it, the databases they run on (a SQLite file, a private PostgreSQL server when its binaries are
found), and the CPU time of the processes measured."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from api import start_daemon
from usage import cpu_seconds

MANUAL = """\
id: {id}
trigger: {{type: manual}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
ON_EVENT = """\
id: {id}
trigger: {{type: event, config: {{event_pattern: "bench.{n}.*"}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
YEARLY = """\
id: {id}
trigger: {{type: cron, config: {{expression: "0 3 1 1 *"}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
THRESHOLD = """\
id: {id}
trigger:
  type: threshold
  config: {{metric: bench.{n}, operator: ">", value: 0.8, every: 1m}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
MIX = ((MANUAL, 40), (ON_EVENT, 30), (YEARLY, 25), (THRESHOLD, 5))
"""Trigger types of the loops, in percent: manual, event, cron (never due in a bench), threshold."""


def workspace(root: Path, loops: int, database: str) -> dict[str, str]:
    """``loops`` loop files in ``root/loops`` (``MIX``: the first one manual, ``loop0``), a
    config serving the API on a free port; the environment a daemon there runs with."""
    folder = root / "loops"
    folder.mkdir()
    kinds = [text for text, share in MIX for _ in range(share)]
    for n in range(loops):
        text = kinds[n * len(kinds) // loops] if n else MANUAL
        (folder / f"loop{n}.yaml").write_text(text.format(id=f"loop{n}", n=n))
    (root / "loopengine.yaml").write_text(json.dumps({"daemon": {"port": 0}}))
    env = {**os.environ, "LOOPENGINE_DATABASE": database}
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    return env


@contextmanager
def daemon(root: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``loopengine daemon loops`` in ``root`` (``api.start_daemon``): the process and its API
    URL once it is ready; stopped and waited for at the end."""
    process, url = start_daemon(root, env)
    try:
        yield process, url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def postgres_available() -> bool:
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


@contextmanager
def postgres() -> Iterator[tuple[str, int]]:
    """A private PostgreSQL server on 127.0.0.1 (the tests' own, fsync off): its URL and the
    postmaster's pid."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres import postgres_cluster

    with postgres_cluster() as server:
        pid = int((server.home / "data" / "postmaster.pid").read_text().split()[0])
        yield server.url, pid


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its children (PostgreSQL's backends and workers), those alive now."""
    total = 0.0
    for child in [pid, *_children(pid)]:
        try:
            total += cpu_seconds(child)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def _children(pid: int) -> list[int]:
    found = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            found += [int(child) for child in Path(task).read_text().split()]
        except FileNotFoundError:
            continue
    return found
