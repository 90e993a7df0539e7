"""The ``shell`` action: one command, run as an argv list (never through a shell) in its own
process group, under the actions root, with a deadline and bounded output."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, PlainValidator
from typing_extensions import TypeAliasType

from loopengine._json import JSON, JSONObject
from loopengine._secrets import redact
from loopengine.builtins._files import actions_root
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, skill

if TYPE_CHECKING:
    from anyio.abc import ByteReceiveStream, Process

__all__ = ["INHERITED", "MAX_OUTPUT", "shell"]

MAX_OUTPUT = 65_536
"""Most bytes of each of stdout and stderr a result keeps; the rest is read and counted."""
INHERITED = ("PATH", "HOME", "LANG")
"""What the command gets of this process's environment besides its own ``env``."""
_REAPED_S = 10.0
"""How long a killed command's leader may take to be reaped."""
_FAILURE_SHOWN = 500
"""Most characters of stderr's end a failure's message quotes."""


def _argument(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    raise ValueError(f"an argument is text or a number, not {type(value).__name__}")


Argument = TypeAliasType(
    "Argument",
    Annotated[str, PlainValidator(_argument, json_schema_input_type=str | int | float | bool)],
)
"""An item of an argv: text as is; a number or a boolean as its JSON text (``3``, ``true``), as
a ``${ }`` inside text is; nothing else."""


@dataclass(slots=True)
class _Captured:
    """The first ``MAX_OUTPUT`` bytes of a stream, and how many it carried in all."""

    head: bytearray = field(default_factory=bytearray)
    total: int = 0

    def text(self) -> str:
        shown = self.head.decode("utf-8", "replace")
        if self.total <= len(self.head):
            return shown
        return f"{shown}\n… [cut: {self.total:,} bytes, the first {len(self.head):,} kept]"


async def _capture(stream: ByteReceiveStream | None, into: _Captured) -> None:
    """Read ``stream`` to its end, keeping its head: the command is never blocked on a full
    pipe, and memory stays bounded whatever it writes."""
    if stream is None:
        return
    async for chunk in stream:
        room = MAX_OUTPUT - len(into.head)
        if room > 0:
            into.head += chunk[:room]
        into.total += len(chunk)


def _kill_group(process: Process) -> None:
    """Kill every process of the command's group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


async def _end(process: Process) -> None:
    """Kill what is left of the command and reap it, even when the call is cancelled. A group
    whose leader was reaped was killed then: its number may since lead another group."""
    import anyio

    if process.returncode is None:
        _kill_group(process)
    with anyio.CancelScope(shield=True), anyio.move_on_after(_REAPED_S):
        await process.aclose()


@dataclass(frozen=True, slots=True)
class _Finished:
    rc: int | None
    """The exit code, None when the deadline came first."""
    stdout: _Captured
    stderr: _Captured


async def _run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float
) -> _Finished:
    """Run ``argv`` until it exits or ``timeout_s`` passes; its group is killed either way, so
    nothing it started outlives it (a process that left the group is beyond reach). The spawn is
    shielded: cancelled while its pipes connect, asyncio kills the command alone, not what it
    started meanwhile. anyio is imported here: ``validate`` loads this module, and runs nothing."""
    import anyio

    try:
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
    except (OSError, ValueError) as exc:
        raise SkillError(f"shell: cannot run {argv[0]!r}: {exc}") from None
    stdout, stderr = _Captured(), _Captured()
    rc = None
    try:
        with anyio.move_on_after(timeout_s):
            async with anyio.create_task_group() as group:
                group.start_soon(_capture, process.stdout, stdout)
                group.start_soon(_capture, process.stderr, stderr)
                rc = await process.wait()
                _kill_group(process)
    finally:
        await _end(process)
    return _Finished(rc, stdout, stderr)


def _workdir(ctx: SkillContext, cwd: str) -> Path:
    """``cwd`` as a real folder under the actions root, or why not."""
    root = actions_root(ctx).resolve()
    folder = (root / cwd).resolve()
    if folder != root and root not in folder.parents:
        raise SkillError(
            f"shell: cwd {cwd!r} is outside the actions root {root} (set actions.root in "
            "loopengine.yaml to widen it)"
        )
    if not folder.is_dir():
        raise SkillError(f"shell: cwd {cwd!r} is not a folder under {root}")
    return folder


def _environment(env: Mapping[str, str]) -> dict[str, str]:
    inherited = {name: os.environ[name] for name in INHERITED if name in os.environ}
    return {**inherited, **env}


def _failure(argv: Sequence[str], finished: _Finished, ok_codes: Sequence[int]) -> SkillError:
    said = finished.stderr.head.decode("utf-8", "replace").strip()[-_FAILURE_SHOWN:]
    tail = f": {redact(said)}" if said else ""
    return SkillError(f"shell: {argv[0]!r} exited {finished.rc} (ok: {list(ok_codes)}){tail}")


@skill(
    "shell",
    description="Run a command as an argv list (each item one argument, never through a shell) "
    "under actions.root; fails on an exit code not in ok_codes. Result: rc, stdout, stderr "
    "(each cut at 64 KiB), duration_ms.",
)
async def shell(
    ctx: SkillContext,
    command: Annotated[list[Argument], Field(min_length=1)],
    cwd: str = ".",
    env: dict[str, str] | None = None,
    timeout_s: Annotated[float, Field(gt=0, le=86_400)] = 60,
    ok_codes: Annotated[tuple[int, ...], Field(min_length=1)] = (0,),
    dry_run: bool = False,
) -> JSONObject:
    """Run one command.

    Args:
        command: The program and its arguments, e.g. `[rsync, -a, src/, '${ input.target }']`.
        cwd: The folder it runs in, relative to the actions root (default: the root).
        env: Its environment; besides, it inherits only PATH, HOME and LANG.
        timeout_s: Its deadline, when it and every process it started are killed.
        ok_codes: The exit codes that are a success.
        dry_run: Record the argv and run nothing.
    """
    folder, given = _workdir(ctx, cwd), env or {}
    if dry_run or ctx.dry_run:
        planned: list[JSON] = list(command)
        return {"dry_run": True, "argv": planned, "cwd": str(folder), "env": sorted(given)}
    started = time.monotonic()
    finished = await _run(command, folder, _environment(given), timeout_s)
    duration_ms = round((time.monotonic() - started) * 1000, 3)
    if finished.rc is None:
        raise SkillError(
            f"shell: {command[0]!r} ran past its timeout of {timeout_s:g} s and was killed with "
            "every process it started",
            retryable=True,
        )
    if finished.rc not in ok_codes:
        raise _failure(command, finished, ok_codes)
    return {
        "rc": finished.rc,
        "stdout": finished.stdout.text(),
        "stderr": finished.stderr.text(),
        "duration_ms": duration_ms,
    }
