"""The ``shell`` action against real child processes: an argv, never a shell; an environment of
its own; a folder under the actions root; a deadline and a cancel that kill the whole process
group, hostile children included; output cut at 64 KiB with memory bounded."""

from __future__ import annotations

import os
import tracemalloc
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from loopengine.builtins import builtin_registry
from loopengine.builtins._shell import MAX_OUTPUT
from loopengine.contract import Config, Outcome
from loopengine.errors import SkillError
from loopengine.skills import SkillContext
from tests.engine.conftest import open_harness
from tests.waiting import DEADLINE_S, alive

pytestmark = pytest.mark.anyio

SHELL = builtin_registry().skill("shell")
GIB = 1 << 30
IGNORES_TERM_AND_FORKS = 'trap "" TERM; sleep 1000 & echo $$ $! > pids; wait'
"""A hostile child: it ignores SIGTERM, and so does the process it forks."""


def _ctx(folder: Path, *, dry_run: bool = False, config: Config | None = None) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="cleanup",
        phase="act",
        step="run",
        idempotency_key="e1:act:run",
        dry_run=dry_run,
        config=config or Config(),
        base=folder,
        loop_file=folder / "loops" / "cleanup.yaml",
    )


async def _shell(folder: Path, *, ctx: SkillContext | None = None, **params: Any) -> Any:
    """Call the action as the engine does: its params validated first."""
    model = SHELL.params.model_validate(params)
    values = {name: getattr(model, name) for name in type(model).model_fields}
    return await SHELL.fn(ctx or _ctx(folder), **values)


@pytest.fixture
def loops(tmp_path: Path) -> Path:
    """The loop file's folder: the actions root by default."""
    folder = tmp_path / "loops"
    folder.mkdir()
    return folder


async def _ended(pids: list[int]) -> bool:
    """Whether every process of ``pids`` has died, polled for: a process killed a moment ago
    may not have been scheduled to die yet."""
    with anyio.move_on_after(DEADLINE_S):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.01)
    return not any(alive(pid) for pid in pids)


async def _pids(folder: Path) -> list[int]:
    """The pids the hostile child wrote, once it has."""
    with anyio.fail_after(DEADLINE_S):
        while not (text := (folder / "pids").read_text() if (folder / "pids").exists() else ""):
            await anyio.sleep(0.01)
    return [int(pid) for pid in text.split()]


async def test_each_item_is_one_argument_and_no_shell_reads_it(tmp_path: Path, loops: Path) -> None:
    result = await _shell(tmp_path, command=["printf", "%s|", "a b", "$(id)", "*", "; ls", 3, True])
    assert (result["rc"], result["stdout"], result["stderr"]) == (0, "a b|$(id)|*|; ls|3|true|", "")
    assert result["duration_ms"] >= 0


async def test_the_child_inherits_only_path_home_and_lang(
    tmp_path: Path, loops: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("API_TOKEN", "not-for-children")
    result = await _shell(tmp_path, command=["env"], env={"MODE": "fast"})
    seen = dict(line.split("=", 1) for line in result["stdout"].splitlines())
    assert seen == {
        "PATH": os.environ["PATH"],
        "HOME": os.environ["HOME"],
        "LANG": "C.UTF-8",
        "MODE": "fast",
    }


async def test_it_runs_in_the_loop_files_folder_by_default(tmp_path: Path, loops: Path) -> None:
    assert (await _shell(tmp_path, command=["pwd"]))["stdout"] == f"{loops.resolve()}\n"


async def test_cwd_is_a_folder_under_the_actions_root(tmp_path: Path, loops: Path) -> None:
    (loops / "cache").mkdir()
    result = await _shell(tmp_path, command=["pwd"], cwd="cache")
    assert result["stdout"] == f"{(loops / 'cache').resolve()}\n"


async def test_actions_root_in_the_config_is_the_root(tmp_path: Path, loops: Path) -> None:
    (tmp_path / "work").mkdir()
    config = Config.model_validate({"actions": {"root": "work"}})
    result = await _shell(tmp_path, ctx=_ctx(tmp_path, config=config), command=["pwd"])
    assert result["stdout"] == f"{(tmp_path / 'work').resolve()}\n"


@pytest.mark.parametrize("cwd", ["..", "/tmp", "cache/../../.."])
async def test_a_cwd_outside_the_actions_root_is_refused(
    cwd: str, tmp_path: Path, loops: Path
) -> None:
    (loops / "cache").mkdir()
    with pytest.raises(SkillError, match="is outside the actions root"):
        await _shell(tmp_path, command=["touch", "escaped"], cwd=cwd)


async def test_a_link_out_of_the_actions_root_is_refused_as_cwd(
    tmp_path: Path, loops: Path
) -> None:
    (loops / "out").symlink_to(tmp_path)
    with pytest.raises(SkillError, match="is outside the actions root"):
        await _shell(tmp_path, command=["pwd"], cwd="out")


async def test_an_exit_code_not_in_ok_codes_fails_with_what_the_command_said(
    tmp_path: Path, loops: Path
) -> None:
    with pytest.raises(SkillError, match=r"'sh' exited 3 \(ok: \[0\]\): disk full$") as failed:
        await _shell(tmp_path, command=["sh", "-c", "echo disk full >&2; exit 3"])
    assert not failed.value.retryable


async def test_an_exit_code_in_ok_codes_is_a_result(tmp_path: Path, loops: Path) -> None:
    result = await _shell(tmp_path, command=["sh", "-c", "exit 3"], ok_codes=[0, 3])
    assert result["rc"] == 3


async def test_a_missing_program_fails_with_its_name(tmp_path: Path, loops: Path) -> None:
    with pytest.raises(SkillError, match="cannot run 'no-such-program-here'"):
        await _shell(tmp_path, command=["no-such-program-here"])


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_output_is_cut_at_64_kib_with_a_marker(
    stream: str, tmp_path: Path, loops: Path
) -> None:
    redirect = ">&2" if stream == "stderr" else ""
    script = f"head -c 100000 /dev/zero | tr '\\0' x {redirect}"
    result = await _shell(tmp_path, command=["sh", "-c", script])
    assert result[stream] == "x" * MAX_OUTPUT + "\n… [cut: 100,000 bytes, the first 65,536 kept]"


async def test_a_child_writing_1_gib_is_read_to_its_end_in_bounded_memory(
    tmp_path: Path, loops: Path
) -> None:
    tracemalloc.start()
    try:
        result = await _shell(tmp_path, command=["head", "-c", str(GIB), "/dev/zero"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["rc"] == 0
    assert result["stdout"].endswith(f"\n… [cut: {GIB:,} bytes, the first 65,536 kept]")
    assert peak < 16 * MAX_OUTPUT


async def test_at_the_deadline_a_child_that_forks_and_ignores_sigterm_is_killed_with_its_group(
    tmp_path: Path, loops: Path
) -> None:
    with pytest.raises(SkillError, match="ran past its timeout of 1 s") as failed:
        await _shell(tmp_path, command=["sh", "-c", IGNORES_TERM_AND_FORKS], timeout_s=1)
    assert failed.value.retryable
    assert await _ended(await _pids(loops))


async def test_a_cancelled_call_kills_the_group(tmp_path: Path, loops: Path) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(partial(_shell, tmp_path, command=["sh", "-c", IGNORES_TERM_AND_FORKS]))
        pids = await _pids(loops)
        group.cancel_scope.cancel()
    assert await _ended(pids)


async def test_what_the_command_left_running_ends_when_it_exits(
    tmp_path: Path, loops: Path
) -> None:
    result = await _shell(
        tmp_path, command=["sh", "-c", "sleep 1000 & echo $!"], timeout_s=DEADLINE_S
    )
    assert await _ended([int(result["stdout"])])


@pytest.mark.parametrize("given", ["param", "run"])
async def test_a_dry_run_records_the_argv_and_runs_nothing(
    given: str, tmp_path: Path, loops: Path
) -> None:
    ctx = _ctx(tmp_path, dry_run=given == "run")
    command = ["touch", "marker"]
    result = await _shell(
        tmp_path, ctx=ctx, command=command, env={"TOKEN": "x"}, dry_run=given == "param"
    )
    assert result == {"dry_run": True, "argv": command, "cwd": str(loops), "env": ["TOKEN"]}
    assert not (loops / "marker").exists()


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"command": []}, "at least 1 item"),
        ({"command": "rm -rf /tmp/x"}, "valid list"),
        ({"command": ["rm", None]}, "an argument is text or a number, not NoneType"),
        ({"command": ["true"], "timeout_s": 0}, "greater than 0"),
        ({"command": ["true"], "ok_codes": []}, "at least 1 item"),
    ],
)
def test_params_are_checked(params: dict[str, Any], problem: str) -> None:
    assert [problem in p.message for p in SHELL.check_params(params, frozenset())] == [True]


def test_shell_is_a_builtin_skill_with_its_params() -> None:
    assert SHELL.builtin
    assert SHELL.param_names == {"command", "cwd", "env", "timeout_s", "ok_codes", "dry_run"}


GREET = """\
id: greet
trigger: {type: manual}
params:
  name: {type: string}
decide:
  fallback_action: greet
act:
  actions:
    - action_id: greet
      skill_id: shell
      params:
        command: [printf, '%s', '${ input.name }']
"""
HOSTILE_NAME = "$(touch pwned); *"


async def _greet(tmp_path: Path, text: str, *, dry_run: bool = False) -> tuple[Any, Any]:
    """Run the loop ``text`` through an engine; its outcome and its act phase's one call."""
    async with open_harness(tmp_path, builtin_registry()) as harness:
        done = await harness.engine.run(
            harness.loop(text), inputs={"name": HOSTILE_NAME}, dry_run=dry_run
        )
        act = harness.phase(await harness.view(done), "act")
    [call] = act["data"]["calls"]
    return done.outcome, call


async def test_a_loop_runs_its_command_with_a_value_as_one_argument(tmp_path: Path) -> None:
    checked = f"{GREET}validate:\n  assertions:\n    - expression: act.greet.result.stdout == input.name\n"
    outcome, call = await _greet(tmp_path, checked)
    assert outcome is Outcome.COMPLETED
    assert call["result"]["stdout"] == HOSTILE_NAME
    assert not (tmp_path / "pwned").exists()


async def test_a_dry_run_of_a_loop_records_the_argv_it_would_run(tmp_path: Path) -> None:
    _, call = await _greet(tmp_path, GREET, dry_run=True)
    assert call["result"] == {
        "dry_run": True,
        "argv": ["printf", "%s", HOSTILE_NAME],
        "cwd": str(tmp_path.resolve()),
        "env": [],
    }


async def test_a_secret_given_in_env_is_masked_in_the_recorded_result(tmp_path: Path) -> None:
    loop = GREET.replace(
        "command: [printf, '%s', '${ input.name }']",
        "command: [printenv, TOKEN]\n        env: {TOKEN: '${ secret.SHELL_TOKEN }'}",
    )
    token = "s3cr3t-t0ken-4-shell"
    environ = {"SHELL_TOKEN": token}
    async with open_harness(tmp_path, builtin_registry(), environ=environ) as harness:
        done = await harness.engine.run(harness.loop(loop), inputs={"name": "x"})
        [call] = harness.phase(await harness.view(done), "act")["data"]["calls"]
    assert call["result"]["stdout"] == "***\n"
