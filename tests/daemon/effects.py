"""What the fault tests count with: a plugin whose act leaves one effect per idempotency key
and logs every call with the caller's pid, a loop that takes a while before it acts, and reads
of a PostgreSQL store."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import sqlalchemy as sa

from tests.daemon.conftest import Daemon

__all__ = ["SKILLS", "SLOW", "api_of", "calls", "effects", "rows", "write_plugin"]

SKILLS = '''\
import os
import time
from pathlib import Path

from loopengine import SkillContext, skill


@skill("nap")
def nap(ctx: SkillContext, seconds: float) -> dict[str, float]:
    """Take a while, so that a fault lands mid-execution."""
    time.sleep(seconds)
    return {"slept": seconds}


@skill("mark")
def mark(ctx: SkillContext, folder: str) -> dict[str, bool]:
    """An effect made once per idempotency key; every call is logged with the caller's pid."""
    root = Path(folder)
    with open(root / "calls.txt", "a") as log:
        log.write(f"{ctx.idempotency_key} {os.getpid()}\\n")
    done = root / "done" / ctx.idempotency_key.replace("/", "_").replace(":", "_")
    if done.exists():
        return {"again": True}
    done.write_text(str(os.getpid()))
    return {"again": False}
'''

SLOW = """\
id: {id}
trigger: {trigger}
concurrency: {{max: 2, on_overlap: queue, max_queue: 10000}}
analyze:
  analysis_steps:
    - {{name: slow, skill_id: nap, params: {{seconds: {seconds}}}}}
decide: {{decision_tree: [], fallback_action: touch}}
act:
  actions:
    - {{action_id: touch, skill_id: mark, params: {{folder: {folder}}}}}
"""
"""A loop that naps in analyze, then marks in act (format: id, trigger, seconds, folder)."""


def write_plugin(root: Path, daemon: str = "{port: 0}") -> None:
    """The plugin in ``root``, with ``loopengine.yaml`` loading it (``daemon:`` settings given)."""
    (root / "done").mkdir(exist_ok=True)
    (root / "effects.py").write_text(SKILLS)
    (root / "loopengine.yaml").write_text(f"daemon: {daemon}\nplugins: [./effects.py]\n")


def calls(root: Path) -> dict[str, list[int]]:
    """Each idempotency key act was called with, and the pids that called it, in order."""
    found: dict[str, list[int]] = defaultdict(list)
    log = root / "calls.txt"
    for line in log.read_text().splitlines() if log.exists() else ():
        key, pid = line.split()
        found[key].append(int(pid))
    return found


def effects(root: Path) -> int:
    """How many effects act made (one per key)."""
    return len(list((root / "done").iterdir()))


def api_of(daemon: Daemon) -> str:
    return str(daemon.wait_for(lambda line: line.get("kind") == "ready")["api"])


def rows(url: str, query: str) -> list[tuple[object, ...]]:
    """The rows of ``query`` on the database at ``url``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(query))]
    finally:
        engine.dispose()
