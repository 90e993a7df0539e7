"""Diagnostics: one problem of a file, with where it is and how to fix it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Diagnostic", "Level", "Path", "format_path"]

Path = tuple[str | int, ...]


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


def format_path(path: Sequence[str | int]) -> str:
    """``('decide', 'decision_tree', 0, 'action')`` → ``decide.decision_tree[0].action``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem at ``file:line:column`` (1-based) and document ``path``."""

    file: str
    line: int
    column: int
    path: Path
    message: str
    level: Level = Level.ERROR

    @property
    def is_error(self) -> bool:
        return self.level is Level.ERROR

    def format(self) -> str:
        """``file:line:col: path: message``, with ``warning:`` before the path for warnings."""
        where = f"{self.file}:{self.line}:{self.column}"
        label = "warning: " if self.level is Level.WARNING else ""
        path = f"{format_path(self.path)}: " if self.path else ""
        return f"{where}: {label}{path}{self.message}"

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": format_path(self.path),
            "level": self.level.value,
            "message": self.message,
        }
