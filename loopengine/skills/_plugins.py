"""Import plugins (modules, ``.py`` files, ``loopengine.plugins`` entry points) into a registry."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from loopengine.errors import ContractError
from loopengine.skills._registry import Registry

__all__ = ["ENTRY_POINT_GROUP", "load_entry_points", "load_plugin", "looks_like_file"]

ENTRY_POINT_GROUP = "loopengine.plugins"


def looks_like_file(spec: str) -> bool:
    """A plugin written as a path (``./tools.py``) rather than a module name (``my_skills``)."""
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"loopengine_plugin_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ContractError(f"plugin {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_module(name: str, base: Path) -> ModuleType:
    added = str(base) not in sys.path
    if added:
        sys.path.insert(0, str(base))
    try:
        return importlib.import_module(name)
    finally:
        if added:
            sys.path.remove(str(base))


def load_plugin(spec: str, base: Path, registry: Registry) -> int:
    """Import one plugin and register what it defines; ``ContractError`` says why it failed."""
    try:
        if looks_like_file(spec):
            path = (base / spec).resolve()
            if not path.is_file():
                raise ContractError(f"plugin file {spec!r} not found (looked at {path})")
            module = _import_file(path)
        else:
            module = _import_module(spec, base)
    except ContractError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name == spec or (exc.name and spec.startswith(exc.name + ".")):
            raise ContractError(
                f"plugin module {spec!r} not found: install it, or write a path like './{spec}.py'"
            ) from exc
        raise ContractError(f"plugin {spec!r} failed to import: {exc}") from exc
    except Exception as exc:
        raise ContractError(
            f"plugin {spec!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    count = registry.add_module(module)
    if count == 0:
        raise ContractError(f"plugin {spec!r} defines no @skill or @tool function")
    return count


def load_entry_points(registry: Registry) -> int:
    """Register what every installed ``loopengine.plugins`` entry point provides."""
    total = 0
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except Exception as exc:
            raise ContractError(
                f"plugin entry point {entry.name!r} ({entry.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        total += registry.add_object(loaded)
    return total
