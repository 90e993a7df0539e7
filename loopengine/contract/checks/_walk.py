"""Reading raw loop data defensively: parts the schema already rejected are simply skipped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopengine._diagnostics import Diagnostic, Level, Path
from loopengine.contract._lookup import SkillLookup
from loopengine.contract._yaml_source import YamlDocument

__all__ = ["Checked", "Env", "at", "walk"]


@dataclass(frozen=True, slots=True)
class Env:
    """What semantic checks consult besides the document."""

    registry: SkillLookup
    storage: frozenset[str] = frozenset()
    environ: Mapping[str, str] = field(default_factory=dict)
    """Where ``${ secret.NAME }`` is read from, to check a webhook's secret."""
    secrets_required: bool = False
    """A secret a webhook reads must be set: the daemon, which serves the hook, refuses its loop
    without it; elsewhere (``validate``, ``run``) an unset one is a warning."""


def walk(data: Any, pattern: tuple[str, ...], path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, value) of every node matching ``pattern``; ``*`` stands for each list item."""
    if not pattern:
        yield path, data
        return
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(data, list):
            for index, item in enumerate(data):
                yield from walk(item, rest, (*path, index))
    elif isinstance(data, dict) and head in data:
        yield from walk(data[head], rest, (*path, head))


def at(data: Any, *keys: str) -> Any:
    """``data[k1][k2]…`` or None when any step is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


class Checked:
    """Collects diagnostics against one document."""

    def __init__(self, document: YamlDocument) -> None:
        self.document = document
        self.found: list[Diagnostic] = []

    def error(self, path: Path, message: str, *, at_key: bool = False) -> None:
        self.found.append(self.document.diagnostic(path, message, at_key=at_key))

    def warning(self, path: Path, message: str) -> None:
        self.found.append(self.document.diagnostic(path, message, Level.WARNING))
