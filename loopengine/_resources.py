"""Files that ship with the package: the JSON Schemas and the loops of ``loops/``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["shipped_dir", "shipped_loop", "shipped_loops_dir"]

_PACKAGE = Path(__file__).resolve().parent


def shipped_dir(name: str) -> Path:
    """The shipped folder ``name`` (``loops``, ``schemas``) as installed (wheel) or in the source
    tree (editable install)."""
    installed = _PACKAGE / "_data" / name
    return installed if installed.is_dir() else _PACKAGE.parent / name


def shipped_loops_dir() -> Path:
    """``loops/`` as shipped."""
    return shipped_dir("loops")


def shipped_loop(name: str) -> Path | None:
    """The shipped loop file whose id (file name) is ``name``, if any."""
    for suffix in (".yaml", ".yml"):
        candidate = shipped_loops_dir() / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    return None
