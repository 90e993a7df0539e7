"""Every input the daemon-side commands and ``run --input`` take is bounded, and says its bound
when exceeded."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopengine.cli import main
from loopengine.commands._listing import MAX_LISTED
from loopengine.triggers import MAX_EVENT_BYTES, MAX_EVENT_DEPTH


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["emit", "a.b", "--data", "[" * 60_000], "nested more than"),
        (["emit", "a.b", "--data", "[" * 40 + "]" * 40], f"{MAX_EVENT_DEPTH} levels"),
        (["emit", "a.b", "--data", '"' + "x" * MAX_EVENT_BYTES + '"'], "over 65536 bytes"),
        (["emit", "a.*", "--data", "{}"], "write dot-separated names"),
        (["run", "x.yaml", "--input", "x=" + "[" * 60_000], "--input x: nested more than 32"),
        (["run", "x.yaml", "--input", "x=" + "[" * 40 + "]" * 40], "nested more than 32 levels"),
        (["emit", "a.b", "--data", '{"page": [1, NaN]}'], "--data.page.1: NaN is not a finite"),
        (["emit", "a.b", "--data", "1e999"], "--data: 1e999 is not a finite number"),
        (["run", "x.yaml", "--input", "x=NaN"], "--input x=NaN: 'NaN' is not of type 'number'"),
        (["run", "x.yaml", "--input", "x=-Infinity"], "'-Infinity' is not of type 'number'"),
        (["run", "x.yaml", "--input", "x=1e999"], "'1e999' is not of type 'number'"),
        (["emit", "a" * 201], "write dot-separated names"),
        (["events", "list", "--limit", str(MAX_LISTED + 1)], "write a whole number from 1"),
        (["metrics", "list", "--limit", "0"], "write a whole number from 1"),
        (["plan", "x.yaml", "--count", "0"], "--count 0: write a whole number from 1"),
    ],
)
def test_an_input_past_its_bound_is_one_clear_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "x.yaml").write_text(
        "id: x\ntrigger: {type: cron, config: {expression: '0 2 * * *'}}\n"
        "params: {x: {type: number}}\n"
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert message in err
