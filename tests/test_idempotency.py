"""Nothing runs twice: processes started at once with one idempotency key run the loop once, and
every one of them returns that execution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_until

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


SLOW_SKILLS = (
    SKILLS
    + """

@skill
def count(ctx):
    return {"seen": 1}

@skill
def slow_analysis(ctx):
    Path("analyzing").touch()
    while Path("hold").exists():
        time.sleep(0.05)
    return {"analysed": True}
"""
)

INTERRUPTED = """\
id: interrupted
trigger: {type: manual}
detect:
  sources: [{skill: count, name: c}]
analyze:
  analysis_steps: [{name: look, skill_id: slow_analysis}]
decide: {decision_tree: [], fallback_action: act_once}
act:
  actions: [{action_id: act_once, skill_id: side_effect}]
"""


def test_resumes_started_at_once_run_the_rest_once(tmp_path: Path) -> None:
    """An execution killed in analyze (detect, which called a skill, committed), then resumed
    by eight processes at once: one resumes it and acts once; the others say it is taken, in one
    line."""
    (tmp_path / "skills.py").write_text(SLOW_SKILLS)
    (tmp_path / "loopengine.yaml").write_text("plugins: [./skills.py]\n")
    (tmp_path / "interrupted.yaml").write_text(INTERRUPTED)
    (tmp_path / "hold").touch()
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}"}
    env.pop("LOOPENGINE_CONFIG", None)
    loopengine = [sys.executable, "-m", "loopengine"]
    running = subprocess.Popen([*loopengine, "run", "interrupted.yaml"], cwd=tmp_path, env=env)
    history = [*loopengine, "history", "--json"]

    def recorded() -> list[dict[str, str]]:
        listed = subprocess.run(
            history, cwd=tmp_path, env=env, capture_output=True, text=True, check=True
        )
        return list(json.loads(listed.stdout)["executions"])

    wait_until(
        lambda: (tmp_path / "analyzing").exists() and recorded(),
        "the execution never reached analyze",
    )
    running.kill()
    running.wait()
    (tmp_path / "hold").unlink()
    execution_id = recorded()[0]["execution_id"]
    resumes = [
        subprocess.Popen(
            [*loopengine, "resume", execution_id],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    outcomes = [(p.communicate(timeout=60), p.returncode) for p in resumes]
    assert (tmp_path / "ran.txt").read_text().split() == [execution_id]
    assert sorted(code for _, code in outcomes) == [0] + [1] * 7
    for (out, err), code in outcomes:
        if code:
            assert len(err.strip().splitlines()) == 1, err
            assert "Traceback" not in err
        else:
            assert "completed" in out
