"""A workspace whose cluster is one scripted server, and the CLI run in it as a user would:
what the tests of the shipped autolearn loops share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.cli import main
from loopengine.store import create_engine


def write_config(root: Path, base_url: str, nodes: tuple[str, ...], more: str = "") -> None:
    """``loopengine.yaml`` with ``nodes`` (model: the lowercase name) on ``base_url``."""
    listed = "\n".join(
        f"    {name}: {{base_url: '{base_url}', model: {name.lower()}, timeout_s: 5}}"
        for name in nodes
    )
    (root / "loopengine.yaml").write_text(f"cluster:\n  nodes:\n{listed}\n{more}")


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def act_note(record: dict[str, Any]) -> str:
    """The message of the action an execution ran that logs one."""
    [act] = [phase for phase in record["phases"] if phase["phase"] == "act"]
    [said] = [ran["log"]["message"] for ran in act["data"]["actions"] if "log" in ran]
    return str(said)


def open_store() -> sa.Connection:
    """A connection to the workspace's store (the current folder's)."""
    return create_engine("sqlite:///.loopengine/loopengine.db").connect()
