"""The file actions' trash stays bounded: a call's folder goes once its record is older than
``actions.trash_days``, at most once an hour, never while its execution may still roll it back,
nor when the call stopped half way."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.builtins._trash import PRUNE_EVERY_S, TrashEntry, due, expired, prune
from loopengine.contract import Config, Outcome
from loopengine.skills import SkillContext
from loopengine.store import executions
from tests.engine.conftest import open_harness

DAY_S = 86_400.0
NOW = 1_000_000_000.0
WEEK_AGO = NOW - 7 * DAY_S


# which entries are expired


def _names(entries: list[TrashEntry]) -> list[str]:
    return [entry.name for entry in entries]


def test_an_entry_recorded_longer_ago_than_the_retention_is_expired() -> None:
    entries = [
        TrashEntry("older", WEEK_AGO - 1, "e1"),
        TrashEntry("just", WEEK_AGO, "e2"),
        TrashEntry("young", NOW - 60, "e3"),
    ]
    assert _names(expired(entries, NOW, 7, ())) == ["older"]


def test_the_retention_is_counted_in_days_fractions_included() -> None:
    entries = [TrashEntry("noon", NOW - 13 * 3600, "e1"), TrashEntry("now", NOW - 60, "e2")]
    assert _names(expired(entries, NOW, 0.5, ())) == ["noon"]


def test_an_entry_of_an_execution_not_finished_is_kept_however_old() -> None:
    entries = [TrashEntry("waiting", 0.0, "e1"), TrashEntry("finished", 0.0, "e2")]
    assert _names(expired(entries, NOW, 7, {"e1"})) == ["finished"]


def test_an_entry_whose_call_stopped_half_way_is_kept_however_old() -> None:
    assert expired([TrashEntry("half", None)], NOW, 7, ()) == []


def test_an_entry_recorded_without_its_execution_goes_by_its_age() -> None:
    assert _names(expired([TrashEntry("before", 0.0)], NOW, 7, {"e1"})) == ["before"]


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        (None, True),
        (NOW - PRUNE_EVERY_S - 1, True),
        (NOW - PRUNE_EVERY_S + 1, False),
        (NOW, False),
        (NOW + 60, True),
    ],
)
def test_a_prune_is_due_once_an_hour_or_when_the_clock_went_back(
    last: float | None, expected: bool
) -> None:
    assert due(last, NOW) is expected


# pruning a real trash folder


def _recorded(trash: Path, name: str, at: float, **record: Any) -> Path:
    """A call's folder in ``trash``: its entry and its record, written at ``at``."""
    folder = trash / name
    (folder / "entry").mkdir(parents=True)
    (folder / "entry" / "kept.txt").write_text("what the call took away")
    (folder / "record.json").write_text(json.dumps({"op": "delete", **record}))
    os.utime(folder / "record.json", (at, at))
    return folder


def _entries(trash: Path) -> list[str]:
    return sorted(path.name for path in trash.iterdir() if not path.name.startswith("."))


@pytest.fixture
def trash(tmp_path: Path) -> Path:
    """Four calls' folders: expired, of an unfinished execution, stopped half way, young."""
    folder = tmp_path / "trash"
    _recorded(folder, "a" * 32, WEEK_AGO - 60, execution="done")
    _recorded(folder, "b" * 32, WEEK_AGO - 60, execution="running")
    (folder / ("c" * 32) / "entry").mkdir(parents=True)
    _recorded(folder, "d" * 32, NOW - 60, execution="done")
    return folder


def test_prune_removes_the_expired_entries_and_asks_only_about_their_executions(
    trash: Path,
) -> None:
    asked: list[list[str]] = []

    def unfinished(ids: list[str]) -> set[str]:
        asked.append(ids)
        return {"running"}

    assert prune(trash, NOW, 7, unfinished) == ["a" * 32]
    assert _entries(trash) == ["b" * 32, "c" * 32, "d" * 32]
    assert asked == [["done", "running"]]


def test_prune_runs_at_most_once_an_hour(trash: Path) -> None:
    assert prune(trash, NOW, 7, lambda ids: ()) == ["a" * 32, "b" * 32]
    _recorded(trash, "e" * 32, 0.0, execution="done")
    assert prune(trash, NOW + PRUNE_EVERY_S - 1, 7, lambda ids: ()) == []
    assert prune(trash, NOW + PRUNE_EVERY_S + 1, 7, lambda ids: ()) == ["e" * 32]


def test_prune_finishes_removing_what_an_earlier_prune_left(trash: Path) -> None:
    left = trash / (".gone-" + "f" * 32)
    (left / "entry").mkdir(parents=True)
    prune(trash, NOW, 7, lambda ids: ())
    assert not left.exists()


def test_prune_ignores_what_is_no_calls_folder(trash: Path) -> None:
    (trash / "notes.txt").write_text("mine")
    (trash / "link").symlink_to(trash / ("a" * 32))
    prune(trash, NOW, 7, lambda ids: ())
    assert (trash / "notes.txt").read_text() == "mine"
    assert (trash / "link").is_symlink()


def test_prune_of_a_missing_trash_makes_nothing(tmp_path: Path) -> None:
    assert prune(tmp_path / "trash", NOW, 7, lambda ids: ()) == []
    assert not (tmp_path / "trash").exists()


# through the file actions


def _ctx(root: Path, key: str, days: float = 7) -> SkillContext:
    return SkillContext(
        execution_id=key.partition(":")[0],
        loop_id="files",
        phase="act",
        step="a",
        idempotency_key=key,
        loop_file=root / "loop.yaml",
        base=root,
        config=Config.model_validate({"actions": {"trash_days": days}}),
    )


def test_a_file_action_prunes_the_trash_when_due(tmp_path: Path) -> None:
    delete = builtin_registry().skill("file.delete").fn
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "new.txt").write_text("new")
    first = Path(delete(_ctx(tmp_path, "e1:act:a"), path="old.txt")["trash"])
    assert json.loads((first / "record.json").read_text())["execution"] == "e1"
    two_days_ago = time.time() - 2 * DAY_S
    os.utime(first / "record.json", (two_days_ago, two_days_ago))
    (first.parent / ".pruned").unlink()
    second = Path(delete(_ctx(tmp_path, "e2:act:a", days=1), path="new.txt")["trash"])
    assert _entries(first.parent) == [second.name]


def test_a_prune_that_fails_is_logged_and_the_action_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(*_: Any) -> None:
        raise RuntimeError("no event loop to ask")

    monkeypatch.setattr("loopengine.builtins._files.prune", failing)
    (tmp_path / "old.txt").write_text("old")
    with caplog.at_level(logging.WARNING, logger="loopengine.skills"):
        done = (
            builtin_registry().skill("file.delete").fn(_ctx(tmp_path, "e1:act:a"), path="old.txt")
        )
    assert not (tmp_path / "old.txt").exists()
    assert Path(done["trash"]).is_dir()
    assert "the trash was not pruned: RuntimeError: no event loop to ask" in caplog.text


def test_trash_days_is_a_positive_number_of_days() -> None:
    assert Config().actions.trash_days == 7
    with pytest.raises(ValueError, match="greater than 0"):
        Config.model_validate({"actions": {"trash_days": 0}})


WAITING = """\
id: waiting
trigger: {type: manual}
decide:
  fallback_action: write
  human_approval: {required_for: [write], timeout_hours: 2}
act:
  actions:
    - {action_id: write, skill_id: file.write, params: {path: w.txt, content: w}}
"""
WRITING = """\
id: writing
trigger: {type: manual}
params:
  path: {type: string}
decide: {decision_tree: [], fallback_action: write}
act:
  actions:
    - {action_id: write, skill_id: file.write, params: {path: '${ input.path }', content: x}}
"""


@pytest.mark.anyio
async def test_an_engines_file_action_keeps_what_a_waiting_execution_may_roll_back(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path, builtin_registry()) as harness:
        waiting = await harness.engine.run(harness.loop(WAITING, "waiting.yaml"))
        assert waiting.outcome is Outcome.AWAITING_APPROVAL
        writing = harness.loop(WRITING, "writing.yaml")
        first = await harness.engine.run(writing, inputs={"path": "a.txt"})
        assert first.outcome is Outcome.COMPLETED
        asked = [f"unknown-{n}" for n in range(1200)] + [waiting.execution_id, first.execution_id]
        unfinished = await harness.store.read(executions.unfinished, asked)
        assert unfinished == {waiting.execution_id}
        trash = tmp_path / "loopengine.db-trash"
        [done] = _entries(trash)
        os.utime(trash / done / "record.json", (0.0, 0.0))
        kept = _recorded(trash, "b" * 32, 0.0, execution=waiting.execution_id).name
        (trash / ".pruned").unlink()
        second = await harness.engine.run(writing, inputs={"path": "b.txt"})
        assert second.outcome is Outcome.COMPLETED
    assert done not in _entries(trash)
    assert kept in _entries(trash)
