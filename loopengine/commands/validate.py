"""``loopengine validate PATH...``: check loop files and folders, report every problem."""

from __future__ import annotations

from pathlib import Path

from loopengine.commands._console import Console
from loopengine.contract import Diagnostic, LoadReport, LoopLoader, find_loop_files
from loopengine.errors import ContractError
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


def _summary(console: Console, reports: list[LoadReport]) -> str:
    errors = sum(len(r.errors) for r in reports)
    warnings = sum(len(r.diagnostics) - len(r.errors) for r in reports)
    invalid = sum(1 for r in reports if not r.ok)
    warned = f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""
    if invalid:
        counts = f"{errors} error{'s' if errors != 1 else ''}{warned}"
        where = f"in {invalid} of {len(reports)} file{'s' if len(reports) != 1 else ''}"
        return console.style(f"✗ {counts} {where}", "red", "bold")
    noun = "loop" if len(reports) == 1 else "loops"
    return console.style(f"✓ {len(reports)} {noun} valid{warned}", "green", "bold")


def run_validate(console: Console, paths: list[Path], config: Path | None, as_json: bool) -> int:
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise ContractError(f"{missing[0]}: no such file or folder")
    files = list(find_loop_files(paths))
    if not files:
        raise ContractError(f"no loop files (*.yaml, *.yml) in {', '.join(map(str, paths))}")
    workspace = load_workspace(config)
    reports = LoopLoader(workspace.env).load_paths(files)
    if as_json:
        console.json(
            {
                "valid": all(r.ok for r in reports),
                "errors": sum(len(r.errors) for r in reports),
                "warnings": sum(len(r.diagnostics) - len(r.errors) for r in reports),
                "files": [
                    {
                        "file": r.file,
                        "loop_id": r.loop.id if r.loop else None,
                        "valid": r.ok,
                        "diagnostics": [d.as_json() for d in r.diagnostics],
                    }
                    for r in reports
                ],
            }
        )
    else:
        for report in reports:
            for diagnostic in report.diagnostics:
                console.print(_format(console, diagnostic))
        console.print(_summary(console, reports))
    return 0 if all(r.ok for r in reports) else 1
