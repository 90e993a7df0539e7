"""``loopengine run LOOP.yaml``: one execution now, with live phase progress on a terminal."""

from __future__ import annotations

from pathlib import Path

from loopengine._resources import shipped_loop
from loopengine.app import open_runtime, record_of
from loopengine.commands._console import Console
from loopengine.commands._inputs import parse_inputs
from loopengine.commands._progress import LivePhases
from loopengine.commands._report import show_record
from loopengine.store import new_envelope

__all__ = ["run_loop"]


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
    live = LivePhases(console, as_json)
    if not path.exists() and (shipped := shipped_loop(str(path))) is not None:
        path = shipped
    async with open_runtime(config, live, live.progress) as runtime:
        loop = runtime.load_loop(str(path))
        inputs = parse_inputs(pairs, loop)
        envelope = new_envelope(loop.id, inputs, idempotency_key=idempotency_key)
        done = await runtime.engine.run(loop, envelope=envelope, dry_run=dry_run)
        record = await record_of(runtime, done)
    live.finish()
    show_record(console, record, as_json, phases=not live.live)
    return 0 if done.outcome.succeeded else 1
