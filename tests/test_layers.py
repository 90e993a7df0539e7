"""The package's imports follow the layers of ``architecture.md`` and form no cycle.

Every ``import`` the code runs counts, at module top or inside a function; imports under
``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import loopengine

ROOT = Path(loopengine.__file__).parent
BASE = frozenset(
    {
        "errors",
        "_diagnostics",
        "_hosts",
        "_text",
        "_json",
        "_faults",
        "_suggestions",
        "_concurrency",
        "_lazy",
        "_resources",
        "_secrets",
        "_startup",
        "_tracing",
    }
)
"""Modules every layer may use; they import only one another."""
LAYERS: dict[str, frozenset[str]] = {
    **{module: frozenset() for module in BASE},
    "expr": frozenset(),
    "triggers": frozenset({"expr"}),
    "contract": frozenset({"expr", "triggers"}),
    "store": frozenset(),
    # A skill is handed the engine's store and may hand it writes (``SkillOutput.effects``).
    "skills": frozenset({"contract", "expr", "store"}),
    "llm": frozenset({"contract", "skills", "store", "expr"}),
    # A thread's batches get fresh call ids; a conversation commits the agent loop's rounds.
    "threads": frozenset({"llm", "store"}),
    "autolearn": frozenset({"skills", "contract", "llm", "store"}),
    # Knowledge bases: the config's collections, their chunks and keyword index in the store,
    # their vectors made by a cluster node; the corrective pipeline decides over injected ports.
    "knowledge": frozenset({"contract", "llm", "store"}),
    # The event source matches event names with the trigger layer's pure pattern matcher; the
    # registry holds autolearn's skills beside the others; the LLM runtime answers with what
    # autolearn remembers of the user and explores the nodes it scored; the knowledge skills
    # and tool search the knowledge bases and run the corrective pipeline on the cluster.
    "builtins": frozenset(
        {
            "skills",
            "contract",
            "expr",
            "triggers",
            "llm",
            "threads",
            "store",
            "autolearn",
            "knowledge",
        }
    ),
    # The engine hands LLM skills the built-ins' LLM runtime (cluster, toolbox, threads).
    "engine": frozenset({"contract", "expr", "skills", "builtins", "llm", "store", "triggers"}),
    # The composition: settings, the workspace (built-ins and plugins), the runtime over the engine,
    # and the operations every face calls (what autolearn learned among them).
    "app": frozenset(
        {
            "contract",
            "expr",
            "triggers",
            "store",
            "skills",
            "builtins",
            "llm",
            "engine",
            "autolearn",
            "knowledge",
        }
    ),
    # The webhook receiver checks signatures as the daemon's webhook triggers do.
    "testing": frozenset({"llm", "store", "triggers"}),
    # The daemon runs on the composed runtime (store, engine, registry), as ``run`` does, and
    # schedules the shipped autolearn loops.
    "daemon": frozenset(
        {"contract", "expr", "triggers", "store", "engine", "app", "llm", "autolearn"}
    ),
    # The HTTP API, a face beside the commands: its chat endpoints answer one message as
    # ``loopengine chat`` does (``app``); its thread endpoints append batches by the threads
    # layer's rules (seed 002).
    "api": frozenset(
        {
            "contract",
            "expr",
            "triggers",
            "store",
            "engine",
            "app",
            "llm",
            "threads",
            "autolearn",
            "daemon",
            "skills",
            "console",
            "knowledge",
        }
    ),
    # The web console, a face beside the API and served with it: its views call the same
    # operations (``app``) on the daemon's context (``api._context``); events are held to the
    # trigger layer's bounds and patterns, and autolearn's records shaped as its API shapes them.
    "console": frozenset({"contract", "store", "app", "api", "triggers", "autolearn"}),
}
"""What each layer may import besides itself and ``BASE``; unlisted modules (the CLI and the
commands, faces over the others) may import anything."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    """``if TYPE_CHECKING:`` (its ``else:`` branch runs, and is walked)."""
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, package: str, types: bool) -> Iterator[str]:
    """What ``tree`` imports; with ``types``, what it imports for annotations alone too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for branch in [*node.body, *node.orelse] if types else node.orelse:
                yield from _imports(ast.Module(body=[branch], type_ignores=[]), package, types)
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
            yield from _imports(node, package, types)


def _lazy_targets(tree: ast.AST) -> Iterator[str]:
    """Modules a package face loads by name (``_EXPORTS = {name: module}``) or ``import_module``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "_EXPORTS" for target in node.targets
        ):
            assert isinstance(node.value, ast.Dict)
            yield from (v.value for v in node.value.values if isinstance(v, ast.Constant))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield str(node.args[0].value)


def _modules() -> dict[str, Path]:
    return {_module(path): path for path in ROOT.rglob("*.py")}


@cache  # built when a test first asks: every worker collects the tests
def _graph(types: bool = False) -> dict[str, set[str]]:
    """Each module's imports of the package's modules; with ``types``, those made for
    annotations alone too (a type may not climb a layer nor close a circle either)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        imported = {*_imports(tree, package, types), *_lazy_targets(tree)}
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
    if layer is None or relative in BASE:
        return True
    if target == "loopengine":
        return False
    target_layer = _layer(target)
    return (
        target_layer == layer
        or target_layer in LAYERS[layer]
        or relative in LAYERS[layer]
        or (target_layer is not None and layer.startswith(target_layer + "."))
    )


def test_the_walk_sees_the_whole_package() -> None:
    graph = _graph()
    assert {"loopengine.engine._runner", "loopengine.contract._loader"} <= set(graph)
    assert "loopengine.contract._loop" in graph["loopengine.contract._loader"]


@pytest.mark.parametrize("module", sorted(_modules()))
def test_imports_respect_the_layer_table(module: str) -> None:
    forbidden = sorted(
        target for target in _graph(types=True)[module] if not _allowed(module, target)
    )
    assert not forbidden, f"{module} may not import {forbidden} (architecture.md, Packages)"


def test_no_import_cycle() -> None:
    typed = _graph(types=True)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(typed[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(typed):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("loopengine.store._store", "loopengine.engine._runner"),
        ("loopengine.llm._agent", "loopengine.engine"),
        ("loopengine.contract._loader", "loopengine.skills._registry"),
        ("loopengine.skills._registry", "loopengine.builtins"),
        ("loopengine.llm._agent", "loopengine.builtins._tools"),
        ("loopengine.autolearn._skills", "loopengine.builtins"),
        ("loopengine.llm._chain", "loopengine.threads"),
        ("loopengine.contract._loop", "loopengine"),
        ("loopengine._concurrency", "loopengine.store"),
        ("loopengine.daemon._daemon", "loopengine.api._app"),
        ("loopengine.app._runtime", "loopengine.daemon"),
    ],
)
def test_the_table_refuses_what_the_architecture_forbids(source: str, target: str) -> None:
    assert not _allowed(source, target)


def test_names_a_package_face_loads_lazily_are_edges() -> None:
    assert "loopengine.contract._loader" in _graph()["loopengine.contract"]
