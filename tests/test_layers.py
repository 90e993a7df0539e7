"""The package's imports follow the layers of ``architecture.md`` and form no cycle.

Every ``import`` the code runs counts, at module top or inside a function; imports under
``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopengine

ROOT = Path(loopengine.__file__).parent
BASE = frozenset({"errors", "_suggestions", "_concurrency", "_lazy", "_resources"})
"""Modules every layer may use."""
LAYERS: dict[str, frozenset[str]] = {
    "expr": frozenset(),
    "triggers": frozenset({"expr"}),
    "contract": frozenset({"expr", "triggers"}),
    "store": frozenset(),
    "skills": frozenset({"contract", "expr"}),
    "llm": frozenset({"contract", "skills", "store", "expr"}),
    "skills.builtin": frozenset({"skills", "contract", "expr", "triggers", "llm", "store"}),
    "engine": frozenset({"contract", "expr", "skills", "llm", "store", "triggers"}),
    "testing": frozenset({"llm", "store"}),
}
"""What each layer may import besides itself and ``BASE``; unlisted modules (the CLI, the
workspace and runtime that compose the layers) may import anything."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, package: str) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                )
            yield base.rstrip(".")
            yield from (f"{base}.{alias.name}" for alias in node.names)
        else:
            yield from _imports(node, package)


def _graph() -> dict[str, set[str]]:
    modules = {_module(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set(_imports(ast.parse(path.read_text()), package))
        graph[name] = {target for target in imported if target in modules and target != name}
    return graph


def _layer(module: str) -> str | None:
    """The layer a module belongs to (the longest matching entry of ``LAYERS``)."""
    relative = module.removeprefix("loopengine.")
    for layer in sorted(LAYERS, key=len, reverse=True):
        if relative == layer or relative.startswith(layer + "."):
            return layer
    return None


def _allowed(source: str, target: str) -> bool:
    layer, relative = _layer(source), target.removeprefix("loopengine.")
    if layer is None or target == "loopengine" or relative in BASE:
        return True
    target_layer = _layer(target)
    return (
        target_layer == layer
        or target_layer in LAYERS[layer]
        or (target_layer is not None and layer.startswith(target_layer + "."))
    )


GRAPH = _graph()


def test_the_walk_sees_the_whole_package() -> None:
    assert {"loopengine.engine._runner", "loopengine.contract._loader"} <= set(GRAPH)
    assert "loopengine.contract._loop" in GRAPH["loopengine.contract._loader"]


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_respect_the_layer_table(module: str) -> None:
    forbidden = sorted(target for target in GRAPH[module] if not _allowed(module, target))
    assert not forbidden, f"{module} may not import {forbidden} (architecture.md, Packages)"


def test_no_import_cycle() -> None:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)
