"""Faults stay local to one job: a daemon killed at any moment of an execution, or a job that
meets an unexpected error, never stops the daemon that comes next."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon.conftest import Workspace

DIE_ONCE = '''\
import os
import signal
from pathlib import Path

from loopengine import SkillContext, skill


@skill("die_once")
def die_once(ctx: SkillContext, marker: str) -> dict[str, bool]:
    """SIGKILL this process the first time it runs (the marker remembers it did)."""
    path = Path(marker)
    if not path.exists():
        path.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"survived": True}
'''

FRAGILE = """\
id: fragile
trigger: {{type: manual}}
durability: {durability}
analyze:
  analysis_steps:
    - {{name: once, skill_id: die_once, params: {{marker: {marker}}}}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""


def _fragile(workspace: Workspace, durability: str) -> Path:
    marker = workspace.root / "killed.marker"
    (workspace.root / "die_once.py").write_text(DIE_ONCE)
    (workspace.root / "loopengine.yaml").write_text("daemon: {port: 0}\nplugins: [./die_once.py]\n")
    loop = FRAGILE.format(durability=durability, marker=marker)
    (workspace.root / "loops" / "fragile.yaml").write_text(loop)
    return marker


def _killed_mid_run(workspace: Workspace, marker: Path) -> None:
    """Queue a job of ``fragile`` and let a daemon die running it, before any phase commit."""
    workspace.cli("trigger", "fragile")
    daemon = workspace.start()
    assert daemon.process.wait(60) == -9
    assert marker.exists()


@pytest.mark.parametrize("durability", ["execution", "phase"])
def test_a_daemon_killed_before_the_first_commit_leaves_a_job_the_next_one_runs(
    workspace: Workspace, durability: str
) -> None:
    _killed_mid_run(workspace, _fragile(workspace, durability))
    daemon = workspace.start()
    daemon.wait_for(lambda line: line.get("kind") == "end" and line.get("loop") == "fragile")
    assert daemon.stop() == 0
    runs = workspace.json("history", "fragile")
    assert [run["outcome"] for run in runs["executions"]] == ["completed"]


def test_resume_starts_over_a_keyed_run_killed_before_its_first_commit(
    workspace: Workspace,
) -> None:
    """A run given an idempotency key records its execution as it starts (the key's owner):
    killed before anything else was committed, ``resume`` runs it from the start."""
    marker = _fragile(workspace, "execution")
    killed = workspace.cli("run", "loops/fragile.yaml", "--idempotency-key", "k1", check=False)
    assert (killed.returncode, marker.exists()) == (-9, True)
    [execution] = workspace.json("history", "fragile")["executions"]
    done = workspace.cli("resume", execution["execution_id"])
    assert "completed" in done.stdout
