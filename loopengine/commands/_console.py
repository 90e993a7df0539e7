"""Terminal output: colour on a TTY (honouring NO_COLOR and FORCE_COLOR), plain when piped."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Console", "near"]

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def near(location: Path | str) -> str:
    """A local path relative to the working directory when it lies under it, else as given (a
    URL, say)."""
    path = Path(location)
    if path.is_absolute() and path.is_relative_to(Path.cwd()):
        return os.path.relpath(path)
    return str(location)


def _wants_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


class Console:
    """Writes results to stdout and problems to stderr, styled only where a person reads them."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.colour = _wants_colour(self.out)
        self.interactive = self.out.isatty()

    def style(self, text: str, *styles: str) -> str:
        if not self.colour or not styles:
            return text
        codes = ";".join(_CODES[name] for name in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def status(self, text: str) -> None:
        """Rewrite the terminal's current line with ``text`` (live progress; ``""`` clears
        it); only for a person at a terminal (``interactive``)."""
        self.out.write(f"\r\x1b[2K{text}")
        self.out.flush()

    def problem(self, text: str) -> None:
        print(text, file=self.err)

    def json(self, value: Any) -> None:
        json.dump(value, self.out, indent=2, default=str)
        self.out.write("\n")

    def table(self, rows: Sequence[Sequence[str]], styles: Sequence[Sequence[str]] = ()) -> None:
        """Aligned columns; ``styles[i]`` styles column ``i``."""
        if not rows:
            return
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            cells = []
            for index, cell in enumerate(row):
                padded = cell.ljust(widths[index]) if index < len(row) - 1 else cell
                cells.append(self.style(padded, *(styles[index] if index < len(styles) else ())))
            self.print("  ".join(cells).rstrip())
