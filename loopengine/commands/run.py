"""``loopengine run LOOP.yaml``: one execution now, with live phase progress on a terminal."""

from __future__ import annotations

from pathlib import Path

from loopengine._resources import shipped_loop
from loopengine.commands._console import Console
from loopengine.commands._inputs import parse_inputs
from loopengine.commands._progress import live_progress
from loopengine.commands._report import show_record
from loopengine.runtime import open_runtime
from loopengine.store import PhaseResult, executions, new_envelope

__all__ = ["run_loop"]

_MARKS = {True: ("✓", "green"), False: ("✗", "red")}


def _progress_line(console: Console, record: PhaseResult) -> str:
    if "skipped" in record.data:
        return console.style(f"  – {record.phase:<9} skipped ({record.data['skipped']})", "dim")
    mark, colour = _MARKS[record.success]
    text = f"  {console.style(mark, colour)} {record.phase:<9} {record.duration_ms:>9.1f} ms"
    if record.outcome:
        text += f"  → {record.outcome}"
    if record.errors:
        text += "  " + console.style(record.errors[0], "red")
    return text


async def run_loop(
    console: Console,
    path: Path,
    pairs: list[str],
    *,
    config: Path | None,
    dry_run: bool,
    idempotency_key: str | None,
    as_json: bool,
) -> int:
    live = console.interactive and not as_json

    def listener(record: PhaseResult) -> None:
        if live:
            console.print(_progress_line(console, record))

    if not path.exists() and (shipped := shipped_loop(str(path))) is not None:
        path = shipped
    async with open_runtime(config, listener, live_progress(console) if live else None) as runtime:
        loop = runtime.load_loop(str(path))
        inputs = parse_inputs(pairs, loop)
        envelope = new_envelope(loop.id, inputs, idempotency_key=idempotency_key)
        done = await runtime.engine.run(loop, envelope=envelope, dry_run=dry_run)
        record = await runtime.store.read(lambda c: executions.read_record(c, done.execution_id))
    assert record is not None
    if live:
        console.print()
    show_record(console, record, as_json)
    return 0 if done.outcome.succeeded else 1
