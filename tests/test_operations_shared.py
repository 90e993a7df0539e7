"""An operation is written once, in ``loopengine.app``: the CLI's commands, the HTTP API and the
console call it and render what it returns, and never run the store functions it owns
themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import loopengine

ROOT = Path(loopengine.__file__).parent
FACES = ("commands", "api", "console")
OWNED = {
    "approvals": {"waiting"},
    "autolearn": {"learned", "history"},
    "executions": {
        "get_execution",
        "ids_named",
        "page_of_executions",
        "read_record",
    },
    "flags": {"list_flags", "set_flag"},
    "memory": {"remembered"},
    "queue": {"active_daemons", "get_job", "pause", "unpause"},
    "signals": {"insert_event", "insert_metric", "list_events", "metric_series"},
    "status": {"served", "view"},
}
"""The store functions ``app._operations`` runs, by repository."""
SUPERSEDED = {"executions": {"list_executions"}, "intake": {"enqueue_all"}}
"""What the faces ran before an operation ran its own: a listing of executions and a manual
job's intake."""
REFUSED = {
    repository: OWNED.get(repository, set()) | SUPERSEDED.get(repository, set())
    for repository in {*OWNED, *SUPERSEDED}
}


def _calls_of_owned(path: Path) -> list[str]:
    """Where ``path`` names a store function the operations own or replaced (``executions.read_record``,
    or imported by name from its repository)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in REFUSED.get(node.value.id, ()):
                found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "loopengine.store."
        ):
            repository = (node.module or "").rsplit(".", 1)[-1]
            names = {alias.name for alias in node.names} & REFUSED.get(repository, set())
            found += [f"{path.name}:{node.lineno} {repository}.{name}" for name in sorted(names)]
    return found


@pytest.mark.parametrize("face", FACES)
def test_a_face_runs_no_store_function_an_operation_owns(face: str) -> None:
    found = [hit for path in sorted((ROOT / face).glob("*.py")) for hit in _calls_of_owned(path)]
    assert found == [], "call the operation of loopengine.app instead"


def test_the_operations_run_every_function_they_own() -> None:
    """The list above stays the operations' own: each function it names is run there."""
    source = (ROOT / "app" / "_operations.py").read_text()
    named = {f"{repository}.{name}" for repository, names in OWNED.items() for name in names}
    assert {name for name in named if name not in source} == set()


def test_a_face_naming_an_owned_function_is_found(tmp_path: Path) -> None:
    face = tmp_path / "face.py"
    face.write_text(
        "from loopengine.store.queue import pause\n"
        "async def f(store):\n    return await store.read(executions.read_record, 'x')\n"
    )
    assert _calls_of_owned(face) == ["face.py:1 queue.pause", "face.py:3 executions.read_record"]
