"""Diagnostics: one problem of a file, with where it is and how to fix it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["MAX_KEY_SHOWN", "Diagnostic", "Level", "Path", "format_path", "shown_key"]

Path = tuple[str | int, ...]

MAX_KEY_SHOWN = 24
"""Most characters of a key a message quotes: a file that is not a loop (a link to a file of
secrets, say) gets its keys named, never its lines."""


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


def shown_key(key: str) -> str:
    """A key as a message quotes it: at most ``MAX_KEY_SHOWN`` characters, control characters
    escaped (a log line stays one line)."""
    text = key if key.isprintable() else key.encode("unicode_escape").decode("ascii")
    return text if len(text) <= MAX_KEY_SHOWN else text[: MAX_KEY_SHOWN - 1] + "…"


def format_path(path: Sequence[str | int]) -> str:
    """``('decide', 'decision_tree', 0, 'action')`` → ``decide.decision_tree[0].action``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{shown_key(part)}" if text else shown_key(part)
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
