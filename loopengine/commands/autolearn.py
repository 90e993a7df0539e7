"""``loopengine autolearn status | scores | history``: what the autolearn loops learned, read from
the store without writing anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine.commands._console import Console
from loopengine.reader import open_reader
from loopengine.settings import read_settings
from loopengine.store import autolearn, executions, iso

__all__ = ["run_autolearn"]

_LOOPS = ("autotune",)
"""The autolearn loops whose last execution ``status`` shows."""


def _learned(config: Path | None) -> dict[str, Any]:
    """Samples in the window, tuned orders, history and the loops' last executions."""
    window = read_settings(config).config.autolearn.window
    with open_reader(config) as reader:
        if reader is None:
            return {
                "samples": [],
                "routing": {},
                "history": [],
                "last": {loop: [] for loop in _LOOPS},
            }
        return reader.read(
            lambda c: {
                "samples": autolearn.samples_in_window(c, window),
                "routing": autolearn.routing(c),
                "history": autolearn.history(c),
                "last": {
                    loop: [
                        row.summary()
                        for row in executions.list_executions(c, loop_id=loop, limit=1)
                    ]
                    for loop in _LOOPS
                },
            }
        )


def _scores(config: Path | None, learned: dict[str, Any]) -> dict[str, Any]:
    """``scores --json``: each category's nodes with their scores, and the routing followed."""
    from loopengine.llm import Sample, score_nodes

    settings = read_settings(config).config
    samples = [Sample.of(row) for row in learned["samples"]]
    scored = score_nodes(samples, settings.autolearn.window)
    routing = {c: list(nodes) for c, nodes in settings.cluster.routing.items()}
    routing.update({c: list(row["nodes"]) for c, row in learned["routing"].items()})
    return {
        "categories": {c: [n.as_dict() for n in nodes] for c, nodes in scored.items()},
        "routing": routing,
    }


def _print_scores(console: Console, view: dict[str, Any]) -> None:
    if not view["categories"]:
        console.print("No scored responses yet: each `loopengine chat` message adds one per node.")
    for category, nodes in view["categories"].items():
        console.print(console.style(category, "bold"))
        rows = [("node", "score", "speed", "quality", "reliability", "samples")]
        rows += [
            (
                n["node"],
                f"{n['score']:.2f}",
                f"{n['speed']:.1f}",
                f"{n['quality']:.1f}",
                f"{n['reliability']:.1f}",
                str(n["samples"]),
            )
            for n in nodes
        ]
        console.table(rows, (("bold",), (), ("dim",), ("dim",), ("dim",), ("dim",)))
    for category, nodes in view["routing"].items():
        console.print(f"routing {category}: {', '.join(nodes)}")


def _history(learned: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**entry, "created_at": iso(entry["created_at"])} for entry in learned["history"]]


def _status(learned: dict[str, Any]) -> dict[str, Any]:
    samples = learned["samples"]
    return {
        "samples": len(samples),
        "graded": sum(1 for s in samples if s["quality"] is not None),
        "tuned": {
            c: {
                "nodes": row["nodes"],
                "version": row["version"],
                "reason": row["reason"],
                "updated_at": iso(row["updated_at"]),
            }
            for c, row in learned["routing"].items()
        },
        "loops": {loop: rows[0] if rows else None for loop, rows in learned["last"].items()},
    }


def _show_scores(
    console: Console, config: Path | None, learned: dict[str, Any], as_json: bool
) -> None:
    view = _scores(config, learned)
    if as_json:
        console.json(view)
    else:
        _print_scores(console, view)


def _show_history(console: Console, learned: dict[str, Any], as_json: bool) -> None:
    entries = _history(learned)
    if as_json:
        console.json({"history": entries})
    elif not entries:
        console.print("No change yet: the autotune loop writes one when a node earns it.")
    for entry in [] if as_json else entries:
        category = entry["category"] or "-"
        console.print(f"{entry['created_at']}  {entry['kind']:<8} {category}  {entry['detail']}")


def _show_status(console: Console, learned: dict[str, Any], as_json: bool) -> None:
    status = _status(learned)
    if as_json:
        console.json(status)
        return
    console.print(f"{status['samples']} scored responses in the window, {status['graded']} graded")
    for loop, last in status["loops"].items():
        said = f"{last['outcome']} at {last['started_at']}" if last else "never run"
        console.print(f"{loop}: {said}")
    for category, tuned in status["tuned"].items():
        nodes = ", ".join(tuned["nodes"])
        console.print(f"routing {category}: {nodes} (v{tuned['version']}: {tuned['reason']})")


def run_autolearn(console: Console, what: str, config: Path | None, as_json: bool) -> int:
    learned = _learned(config)
    if what == "scores":
        _show_scores(console, config, learned, as_json)
    elif what == "history":
        _show_history(console, learned, as_json)
    else:
        _show_status(console, learned, as_json)
    return 0
