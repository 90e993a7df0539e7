"""Nothing runs twice: processes started at once with one idempotency key run the loop once, and
every one of them returns that execution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SKILLS = """\
import time
from pathlib import Path
from loopengine import skill

@skill
def side_effect(ctx):
    with Path("ran.txt").open("a") as ran:
        ran.write(ctx.execution_id + "\\n")
    time.sleep(0.5)
    return {"done": True}
"""

LOOP = """\
id: once
trigger: {type: manual}
durability: DURABILITY
decide: {decision_tree: [], fallback_action: act_once}
act:
  actions: [{action_id: act_once, skill_id: side_effect}]
"""


@pytest.mark.parametrize("durability", ["execution", "phase"])
def test_processes_sharing_a_key_run_the_loop_once(tmp_path: Path, durability: str) -> None:
    (tmp_path / "skills.py").write_text(SKILLS)
    (tmp_path / "loopengine.yaml").write_text("plugins: [./skills.py]\n")
    (tmp_path / "once.yaml").write_text(LOOP.replace("DURABILITY", durability))
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}"}
    env.pop("LOOPENGINE_CONFIG", None)
    command = [sys.executable, "-m", "loopengine", "run", "once.yaml"]
    command += ["--idempotency-key", "nightly", "--json"]
    processes = [
        subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=60)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0]
    ran = (tmp_path / "ran.txt").read_text().split()
    assert len(ran) == 1
    assert {json.loads(output)["execution_id"] for output in outputs} == set(ran)
