"""``loopengine autolearn status | scores | history | memory``: what the autolearn loops learned,
read from the store without writing anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopengine.app import (
    learned,
    learning_history,
    open_reader,
    read_now,
    read_settings,
    read_store,
    remembered,
)
from loopengine.autolearn import (
    history_view,
    memory_view,
    scores_view,
    status_view,
)
from loopengine.commands._console import Console
from loopengine.store import autolearn

__all__ = ["run_autolearn"]


def _learned(config: Path | None) -> autolearn.Learned:
    settings = read_settings(config)
    with read_store(settings) as reader:
        return read_now(reader, learned(settings.config.autolearn.window))


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
    for category, followed in view["routing"].items():
        order = followed["order"]
        said = "every node but the grader" if order == "fallback" else order
        console.print(f"routing {category}: {', '.join(followed['nodes'])} ({said})")


def _show_scores(
    console: Console, config: Path | None, learned: autolearn.Learned, as_json: bool
) -> None:
    view = scores_view(read_settings(config).config, learned)
    if as_json:
        console.json(view)
    else:
        _print_scores(console, view)


def _show_history(console: Console, config: Path | None, as_json: bool) -> None:
    with open_reader(config) as reader:
        entries = history_view(read_now(reader, learning_history()))
    if as_json:
        console.json({"history": entries})
    elif not entries:
        console.print("No change yet: autotune and autoreview add one when they change things.")
    for entry in [] if as_json else entries:
        category = entry["category"] or "-"
        console.print(f"{entry['created_at']}  {entry['kind']:<8} {category}  {entry['detail']}")


def _show_status(console: Console, learned: autolearn.Learned, as_json: bool) -> None:
    status = status_view(learned)
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
    for category, prompt in status["prompts"].items():
        said = f"v{prompt['version']} {prompt['state']}: {prompt['reason']}"
        console.print(f"instructions {category}: {said}")
    remembered = status["memory"]
    users = remembered["users"]
    said = f"{users} user{'s' * (users != 1)}, {remembered['summarized']} summarized"
    console.print(f"remembered: {said}")


def _show_memory(console: Console, config: Path | None, user: str | None, as_json: bool) -> None:
    with open_reader(config) as reader:
        users = memory_view(read_now(reader, remembered(user)))
    if as_json:
        console.json({"users": users})
    elif not users:
        who = f"of {user!r}" if user else "yet"
        console.print(f"No memory {who}: each `loopengine chat` message adds an exchange.")
    for found in [] if as_json else users:
        profile = found["profile"] or {}
        said = ", ".join(f"{k}: {v}" for k, v in profile.items() if k != "topics" and v)
        topics = ", ".join(profile.get("topics") or [])
        console.print(f"{console.style(found['user'], 'bold')}  {found['exchanges']} exchanges")
        topics = f"; topics: {topics}" if topics else ""
        console.print(f"  profile: {said or 'not detected yet'}{topics}")
        summary, node = found["summary"], found["summary_node"]
        console.print(f"  summary ({node}): {summary}" if summary else "  no summary yet")


def run_autolearn(
    console: Console, what: str, config: Path | None, as_json: bool, user: str | None = None
) -> int:
    if what == "history":
        _show_history(console, config, as_json)
    elif what == "memory":
        _show_memory(console, config, user, as_json)
    elif what == "scores":
        _show_scores(console, config, _learned(config), as_json)
    else:
        _show_status(console, _learned(config), as_json)
    return 0
