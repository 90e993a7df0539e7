"""Only ``loopengine/store/`` sees SQLAlchemy: code outside it hands the store a repository
function and its arguments, never a connection or a closure over one (architecture.md,
Packages). Every ``import`` counts, ``TYPE_CHECKING`` ones included: naming the type is seeing it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import loopengine

ROOT = Path(loopengine.__file__).parent
STORE = ROOT / "store"
OUTSIDE = sorted(path for path in ROOT.rglob("*.py") if STORE not in path.parents)
_STORE_CALLS = frozenset({"read", "write", "submit", "write_once"})
UNTYPED = re.compile(r"dict\[str, Any\]")
UNTYPED_MOST = 168
"""``dict[str, Any]`` in the package may not grow past this (it was 418; the goal was 200)."""


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


def _sqlalchemy_imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "sqlalchemy")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            yield node.module or ""


def _connection_code(tree: ast.AST) -> Iterator[str]:
    """Lambdas, functions of the module and methods of its classes handed to the store as the
    operation it runs (a store function is named through its module: ``queue.claim_next``)."""
    defined = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for node in ast.walk(tree):
        handed = _handed(node) if isinstance(node, ast.Call) else None
        if handed == "<lambda>" or handed in defined:
            yield f"line {node.lineno}: {handed} run by the store"


def _handed(call: ast.Call) -> str | None:
    """The name of what a call to the store's read/write/submit (or ``write_once``) hands it to
    run: ``<lambda>``, a plain name, or ``self.name``; None for a module's function."""
    function = call.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    if called not in _STORE_CALLS:
        return None
    position = 1 if called == "write_once" else 0
    if len(call.args) <= position:
        return None
    operation = call.args[position]
    if isinstance(operation, ast.Lambda):
        return "<lambda>"
    if isinstance(operation, ast.Name):
        return operation.id
    if isinstance(operation, ast.Attribute) and ast.unparse(operation.value) in ("self", "cls"):
        return operation.attr
    return None


@pytest.mark.parametrize("path", OUTSIDE, ids=_name)
def test_no_module_outside_the_store_imports_sqlalchemy(path: Path) -> None:
    found = sorted(set(_sqlalchemy_imports(ast.parse(path.read_text()))))
    assert not found, f"{_name(path)} imports {found}: call a store function instead"


@pytest.mark.parametrize("path", OUTSIDE, ids=_name)
def test_no_transaction_is_scripted_outside_the_store(path: Path) -> None:
    found = list(_connection_code(ast.parse(path.read_text())))
    assert not found, f"{_name(path)}: {found}; name the unit of work in the store"


def test_the_walk_finds_a_scripted_transaction() -> None:
    code = """
def top(connection): ...
class Worker:
    def _claim(self, connection): ...
    async def f(self, store, url):
        def write(connection):
            return 1
        await store.write(write)
        await store.read(lambda c: g(c, 1))
        write_once(url, lambda c: h(c))
        await store.read(top)
        await store.write(self._claim)
        await store.read(queue.claim_next, 1)
"""
    found = list(_connection_code(ast.parse(code)))
    assert len(found) == 5, found


def test_untyped_rows_do_not_grow() -> None:
    count = sum(len(UNTYPED.findall(path.read_text())) for path in ROOT.rglob("*.py"))
    print(f"dict[str, Any] in loopengine/: {count} (at most {UNTYPED_MOST}, goal 200)")
    assert count <= UNTYPED_MOST
