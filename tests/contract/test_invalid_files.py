"""Every kind of invalid loop fails with file:line:col, the offending name, and all errors at once.

Each file in ``invalid/`` states what it must produce in ``# expect: LINE:COL: TEXT`` comments;
the file must produce exactly those diagnostics (TEXT is the start of the message).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopengine.contract import LoopLoader

INVALID = Path(__file__).parent / "invalid"
EXPECT = re.compile(r"^# expect: (\d+):(\d+): (.*)$")


def _expectations(path: Path) -> list[tuple[int, int, str]]:
    found = []
    for line in path.read_text().splitlines():
        if match := EXPECT.match(line):
            found.append((int(match.group(1)), int(match.group(2)), match.group(3)))
    return found


@pytest.mark.parametrize("path", sorted(INVALID.glob("*.yaml")), ids=lambda p: p.stem)
def test_invalid_file_reports_exactly_its_expected_diagnostics(
    path: Path, contract_loader: LoopLoader
) -> None:
    report = contract_loader.load_file(path)
    actual = sorted((d.line, d.column, d.format().split(": ", 1)[1]) for d in report.diagnostics)
    expected = sorted(_expectations(path))
    assert not report.ok
    assert len(actual) == len(expected), "\n".join(f"{a[0]}:{a[1]}: {a[2]}" for a in actual)
    for (line, column, text), (exp_line, exp_column, exp_text) in zip(
        actual, expected, strict=True
    ):
        assert (line, column) == (exp_line, exp_column), text
        assert text.startswith(exp_text), text


def test_every_invalid_file_states_an_expectation() -> None:
    assert all(_expectations(path) for path in INVALID.glob("*.yaml"))
