"""``loopengine run LOOP.yaml``: one execution now, with live phase progress on a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine._resources import shipped_loop
from loopengine.commands._console import Console
from loopengine.commands._inputs import parse_inputs
from loopengine.commands._progress import live_progress
from loopengine.contract import Outcome
from loopengine.engine import PhaseRecord, new_envelope, read_execution
from loopengine.runtime import open_runtime

__all__ = ["SUCCESS", "print_execution", "run_loop"]

SUCCESS = frozenset(
    {Outcome.COMPLETED, Outcome.SKIPPED, Outcome.NOTHING_DETECTED, Outcome.NO_ACTION}
)
_MARKS = {True: ("✓", "green"), False: ("✗", "red")}


def _progress_line(console: Console, record: PhaseRecord) -> str:
    if "skipped" in record.data:
        return console.style(f"  – {record.phase:<9} skipped ({record.data['skipped']})", "dim")
    mark, colour = _MARKS[record.success]
    text = f"  {console.style(mark, colour)} {record.phase:<9} {record.duration_ms:>9.1f} ms"
    if record.outcome:
        text += f"  → {record.outcome}"
    if record.errors:
        text += "  " + console.style(record.errors[0], "red")
    return text


def print_execution(console: Console, view: dict[str, Any], *, phases: bool = True) -> None:
    """The human summary of an execution record."""
    outcome = view["outcome"] or view["status"]
    good = outcome in {o.value for o in SUCCESS}
    console.print(
        f"{console.style(view['loop_id'], 'bold')}  {view['execution_id']}  "
        + console.style(outcome, "green" if good else "red", "bold")
    )
    decision = view.get("decision")
    if decision:
        console.print(f"  decision: {decision.get('action')} ({decision.get('reason')})")
    if view.get("approval"):
        gate = view["approval"]
        console.print(
            f"  approval: {gate['action']} {gate['status']} (deadline {gate['deadline']})"
        )
    if view.get("error"):
        console.print("  error: " + console.style(str(view["error"]), "red"))
    if phases:
        rows = [("phase", "ms", "ok", "outcome / note")]
        for phase in view["phases"]:
            note = phase["data"].get("skipped") or phase["outcome"] or ""
            if phase["errors"]:
                note = phase["errors"][0]
            rows.append(
                (
                    phase["phase"],
                    f"{phase['duration_ms']:.1f}",
                    "yes" if phase["success"] else "no",
                    str(note),
                )
            )
        console.table(rows, (("bold",), (), (), ()))
    for artifact in view.get("artifacts", ()):
        console.print(f"  artifact {artifact['name']}: {artifact['location']}")


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

    def listener(record: PhaseRecord) -> None:
        if live:
            console.print(_progress_line(console, record))

    if not path.exists() and (shipped := shipped_loop(str(path))) is not None:
        path = shipped
    async with open_runtime(config, listener, live_progress(console) if live else None) as runtime:
        loop = runtime.load_loop(str(path))
        inputs = parse_inputs(pairs, loop)
        envelope = new_envelope(loop.id, inputs, idempotency_key=idempotency_key)
        done = await runtime.engine.run(loop, envelope=envelope, dry_run=dry_run)
        view = await runtime.store.read(lambda c: read_execution(c, done.execution_id))
    assert view is not None
    if as_json:
        console.json(view)
    else:
        if live:
            console.print()
        print_execution(console, view)
    return 0 if done.outcome in SUCCESS else 1
