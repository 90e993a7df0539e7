"""The CLI's commands, a module each; ``cli`` imports a command's module only when it runs, so a
command loads only what it uses. ``Console`` and ``progress_line`` are how they print."""

from loopengine.commands._console import Console
from loopengine.commands._progress import progress_line

__all__ = [
    "Console",
    "admin",
    "catalog",
    "chat",
    "executions",
    "history",
    "knowledge",
    "metrics",
    "progress_line",
    "run",
    "validate",
]
