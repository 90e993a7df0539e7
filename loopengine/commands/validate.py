"""``loopengine validate PATH...``: check loop files and folders, report every problem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loopengine.commands._console import Console
from loopengine.contract import Diagnostic, LoadReport, LoopIds, LoopLoader, find_loop_files
from loopengine.errors import ContractError
from loopengine.settings import find_config
from loopengine.workspace import load_workspace

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

    @classmethod
    def of(cls, report: LoadReport) -> _Result:
        return cls(report.file, report.loop_id, tuple(report.diagnostics), report.ok)

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
    noun = "loop" if len(results) == 1 else "loops"
    return console.style(f"✓ {len(results)} {noun} valid{warned}", "green", "bold")


def run_validate(console: Console, paths: list[Path], config: Path | None, as_json: bool) -> int:
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise ContractError(f"{missing[0]}: no such file or folder")
    files = [(file, given) for given in paths for file in find_loop_files([given])]
    if not files:
        raise ContractError(f"no loop files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    # A config applies to the loops under its folder, unless one is given (as ruff does); the
    # loops of one config are one folder's, whose ids are unique.
    loaders: dict[Path | None, tuple[LoopLoader, LoopIds]] = {}
    results: list[_Result] = []
    for file, given in files:
        found = find_config(config, file.parent)
        if found not in loaders:
            loaders[found] = (LoopLoader(load_workspace(found).env, build=False), LoopIds())
        loader, ids = loaders[found]
        report = ids.claim(loader.load_file(file, given))
        results.append(_Result.of(report))
        if not as_json:
            for diagnostic in report.diagnostics:
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
