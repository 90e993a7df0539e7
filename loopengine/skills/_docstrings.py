"""Summary and per-argument descriptions from Google-style or reST docstrings; pure."""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_REST_PARAM = re.compile(r"^:param\s+(?:\w+\s+)?(\w+):\s*(.*)$")
_GOOGLE_ARG = re.compile(r"^(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")
_SECTIONS = {"args:", "arguments:", "parameters:", "params:"}


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(first paragraph, {argument: description}) of a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or line.strip().lower() in _SECTIONS or line.startswith(":"):
            break
        summary.append(line.strip())
    return " ".join(summary), _arguments(lines)


def _arguments(lines: list[str]) -> dict[str, str]:
    described: dict[str, str] = {}
    in_args = False
    current = ""
    for line in lines:
        stripped = line.strip()
        if rest := _REST_PARAM.match(stripped):
            current = rest.group(1)
            described[current] = rest.group(2)
        elif stripped.lower() in _SECTIONS:
            in_args = True
        elif in_args and line[:1] not in (" ", "\t") and stripped:
            in_args = False
        elif in_args and (arg := _GOOGLE_ARG.match(stripped)) and line.startswith((" ", "\t")):
            indent = len(line) - len(line.lstrip())
            if not current or indent <= _indent_of(lines, current):
                current = arg.group(1)
                described[current] = arg.group(2)
                continue
            described[current] += " " + stripped
        elif in_args and current and stripped:
            described[current] += " " + stripped
    return {name: text.strip() for name, text in described.items()}


def _indent_of(lines: list[str], name: str) -> int:
    for line in lines:
        if line.strip().startswith(f"{name}:") or line.strip().startswith(f"{name} ("):
            return len(line) - len(line.lstrip())
    return 0
