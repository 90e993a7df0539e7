"""``loopengine validate PATH...``: check loop files and folders, report every problem."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from loopengine.app import find_config, load_workspace
from loopengine.commands._console import Console
from loopengine.contract import (
    CONFIG_NAMES,
    Diagnostic,
    LoadReport,
    LoopIds,
    LoopLoader,
    find_loop_files,
)
from loopengine.errors import ContractError

__all__ = ["run_validate"]


def _format(console: Console, diagnostic: Diagnostic) -> str:
    text = diagnostic.format()
    if not console.colour:
        return text
    where = f"{diagnostic.file}:{diagnostic.line}:{diagnostic.column}:"
    rest = text[len(where) :]
    if rest.startswith(" warning:"):
        rest = " " + console.style("warning:", "yellow", "bold") + rest[len(" warning:") :]
    return console.style(where, "bold") + rest


@dataclass(frozen=True, slots=True)
class _Result:
    """What ``validate`` keeps of a file once it is checked (not its loop, so memory stays flat)."""

    file: str
    loop_id: str | None
    diagnostics: tuple[Diagnostic, ...]
    ok: bool
    kind: str = "loop"

    @classmethod
    def of(cls, report: LoadReport) -> _Result:
        return cls(report.file, report.loop_id, tuple(report.diagnostics), report.ok)

    @classmethod
    def of_config(cls, file: Path) -> _Result:
        """``file`` checked as the config: its schema and rules, its plugins, its model."""
        try:
            _ = load_workspace(file, entry_points=False).config
        except ContractError as exc:
            found = exc.diagnostics or (Diagnostic(str(file), 1, 1, (), str(exc)),)
            return cls(str(file), None, found, False, "config")
        return cls(str(file), None, (), True, "config")

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)


def _summary(console: Console, results: list[_Result]) -> str:
    errors = sum(r.errors for r in results)
    warnings = sum(len(r.diagnostics) - r.errors for r in results)
    invalid = sum(1 for r in results if not r.ok)
    warned = f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""
    if invalid:
        counts = f"{errors} error{'s' if errors != 1 else ''}{warned}"
        where = f"in {invalid} of {len(results)} file{'s' if len(results) != 1 else ''}"
        return console.style(f"✗ {counts} {where}", "red", "bold")
    found = Counter(r.kind for r in results)
    kinds = " and ".join(
        f"{found[kind]} {kind}{'s' if found[kind] != 1 else ''}"
        for kind in ("loop", "config")
        if found[kind]
    )
    return console.style(f"✓ {kinds} valid{warned}", "green", "bold")


class _Loops:
    """Checks loop files, each with the config that applies to it: the nearest one to its folder
    unless one is given (as ruff does). The loops of one config are one folder's, whose ids are
    unique."""

    def __init__(self, config: Path | None) -> None:
        self.config = config
        self._loaders: dict[Path | None, tuple[LoopLoader, LoopIds]] = {}

    def check(self, file: Path, given: Path) -> _Result:
        found = find_config(self.config, file.parent)
        if found not in self._loaders:
            self._loaders[found] = (LoopLoader(load_workspace(found).env, build=False), LoopIds())
        loader, ids = self._loaders[found]
        return _Result.of(ids.claim(loader.load_file(file, given)))


def run_validate(console: Console, paths: list[Path], config: Path | None, as_json: bool) -> int:
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise ContractError(f"{missing[0]}: no such file or folder")
    files = [(file, given) for given in paths for file in find_loop_files([given])]
    if not files:
        raise ContractError(f"no loop files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    loops = _Loops(config)
    results: list[_Result] = []
    for file, given in files:
        config_file = file.name in CONFIG_NAMES
        result = _Result.of_config(file) if config_file else loops.check(file, given)
        results.append(result)
        if not as_json:
            for diagnostic in result.diagnostics:
                console.print(_format(console, diagnostic))
    if as_json:
        console.json(
            {
                "valid": all(r.ok for r in results),
                "errors": sum(r.errors for r in results),
                "warnings": sum(len(r.diagnostics) - r.errors for r in results),
                "files": [
                    {
                        "file": r.file,
                        "kind": r.kind,
                        "loop_id": r.loop_id,
                        "valid": r.ok,
                        "diagnostics": [d.as_json() for d in r.diagnostics],
                    }
                    for r in results
                ],
            }
        )
    else:
        console.print(_summary(console, results))
    return 0 if all(r.ok for r in results) else 1
