"""File actions: what they change under actions.root, what file.undo restores, what a dry run
leaves alone, and what they refuse (``..``, paths outside, links out, links swapped in, the
store)."""

from __future__ import annotations

import ctypes
import os
import re
import threading
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import _confined, builtin_registry
from loopengine.builtins._confined import Root, parts_of
from loopengine.builtins._files import MAX_CONTENT, trash_folder
from loopengine.contract import Config, Outcome
from loopengine.errors import SkillError
from loopengine.skills import ROLLBACK_SUFFIX, SkillContext
from loopengine.store import Store
from loopengine.testing import memory_store
from tests.engine.conftest import Harness, open_harness

_REGISTRY = builtin_registry()
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("keep")
    return tmp_path / "outside"


def _ctx(root: Path, key: str = "e1:act:a:0:1", **fields: Any) -> SkillContext:
    return SkillContext(
        execution_id="e1",
        loop_id="files",
        phase="act",
        step="a",
        idempotency_key=key,
        loop_file=root / "loop.yaml",
        base=root.parent,
        **fields,
    )


def _call(root: Path, name: str, key: str = "e1:act:a:0:1", **params: Any) -> Any:
    return _REGISTRY.skill(name).fn(_ctx(root, key), **params)


def _undo(root: Path, key: str = "e1:act:a:0:1") -> Any:
    return _REGISTRY.skill("file.undo").fn(_ctx(root, key + ROLLBACK_SUFFIX))


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): path.read_text() if path.is_file() else "/"
        for path in sorted(folder.rglob("*"))
    }


# paths


def test_a_path_is_split_into_names_under_the_root() -> None:
    assert parts_of("a/./b//c.txt", Path("/r")) == ("a", "b", "c.txt")
    assert parts_of("/r/a/c.txt", Path("/r")) == ("a", "c.txt")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("../x", "has '..'"),
        ("a/../../x", "has '..'"),
        ("/etc/passwd", "outside actions.root"),
        ("/r/../etc", "has '..'"),
        (".", "names actions.root itself"),
        ("a\0b", "no path"),
    ],
)
def test_a_path_that_leaves_the_root_is_refused(given: str, said: str) -> None:
    with pytest.raises((PermissionError, ValueError), match=said):
        parts_of(given, Path("/r"))


def test_a_path_over_4096_characters_is_refused_at_validate() -> None:
    problems = _REGISTRY.skill("file.delete").check_params({"path": "a" * 4097}, frozenset())
    assert [(p.path, "4096" in p.message) for p in problems] == [(("path",), True)]


def test_the_root_is_actions_root_from_the_configs_folder(root: Path) -> None:
    (root / "data").mkdir()
    config = Config.model_validate({"actions": {"root": "root/data"}})
    ctx = _ctx(root, config=config)
    _REGISTRY.skill("file.write").fn(ctx, path="f.txt", content="x")
    assert (root / "data" / "f.txt").read_text() == "x"


# write


def test_write_makes_the_file_and_its_folders(root: Path) -> None:
    result = _call(root, "file.write", path="a/b/c.txt", content="héllo")
    assert result == {
        "path": "a/b/c.txt",
        "mode": "overwrite",
        "bytes": 6,
        "size": 6,
        "created": True,
    }
    assert (root / "a/b/c.txt").read_text() == "héllo"


def test_write_replaces_the_file_by_renaming_a_new_one_over_it(root: Path) -> None:
    (root / "f.txt").write_text("old")
    (root / "f.txt").chmod(0o640)
    with open(root / "f.txt") as before:
        _call(root, "file.write", path="f.txt", content="new")
        assert before.read() == "old"
    assert (root / "f.txt").read_text() == "new"
    assert (root / "f.txt").stat().st_mode & 0o777 == 0o640
    assert _tree(root) == {"f.txt": "new"}


def test_write_appends_to_the_end(root: Path) -> None:
    (root / "log.txt").write_text("one\n")
    result = _call(root, "file.write", path="log.txt", content="two\n", mode="append")
    assert (result["size"], (root / "log.txt").read_text()) == (8, "one\ntwo\n")


def test_undo_of_a_write_restores_the_previous_content(root: Path) -> None:
    (root / "f.txt").write_text("old")
    _call(root, "file.write", path="f.txt", content="new")
    assert _undo(root) == {
        "undone": "file.write",
        "path": "f.txt",
        "restored": True,
        "removed": False,
    }
    assert (root / "f.txt").read_text() == "old"


def test_undo_of_a_write_removes_the_file_and_the_folders_it_made(root: Path) -> None:
    (root / "a").mkdir()
    _call(root, "file.write", path="a/b/c/f.txt", content="new")
    _undo(root)
    assert _tree(root) == {"a": "/"}


def test_undo_leaves_a_file_changed_since_the_action(root: Path) -> None:
    _call(root, "file.write", path="f.txt", content="ours")
    (root / "theirs.txt").write_text("theirs")
    (root / "theirs.txt").rename(root / "f.txt")
    with pytest.raises(SkillError, match="changed since the action"):
        _undo(root)
    assert (root / "f.txt").read_text() == "theirs"


def test_content_over_the_limit_is_refused(root: Path) -> None:
    with pytest.raises(SkillError, match="over 16,777,216"):
        _call(root, "file.write", path="f.txt", content="x" * (MAX_CONTENT + 1))
    assert _tree(root) == {}


def test_a_fifo_is_not_written_over(root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(SkillError, match="'pipe' is not a regular file"):
        _call(root, "file.write", path="pipe", content="x", mode="append")


# move and delete


def test_move_renames_and_undo_moves_back(root: Path) -> None:
    (root / "big.log").write_text("data")
    result = _call(root, "file.move", source="big.log", target="archive/2026/big.log")
    assert result == {"source": "big.log", "target": "archive/2026/big.log", "kind": "file"}
    assert _tree(root) == {"archive": "/", "archive/2026": "/", "archive/2026/big.log": "data"}
    assert _undo(root) == {
        "undone": "file.move",
        "source": "archive/2026/big.log",
        "target": "big.log",
    }
    assert _tree(root) == {"big.log": "data"}


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "without"])
def test_move_never_replaces_the_target(
    root: Path, renameat2: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not renameat2:
        monkeypatch.setattr(_confined, "_renameat2", lambda: None)
    (root / "a.txt").write_text("a")
    (root / "b.txt").write_text("b")
    with pytest.raises(SkillError, match=re.escape("'b.txt' exists already")):
        _call(root, "file.move", source="a.txt", target="b.txt")
    assert _tree(root) == {"a.txt": "a", "b.txt": "b"}


def test_delete_moves_to_the_trash_and_undo_restores(root: Path) -> None:
    (root / "old").mkdir()
    (root / "old" / "f.txt").write_text("x")
    result = _call(root, "file.delete", path="old")
    assert (result["path"], result["kind"]) == ("old", "folder")
    assert Path(result["trash"]).parent == trash_folder(_ctx(root))
    assert _tree(root) == {}
    _undo(root)
    assert _tree(root) == {"old": "/", "old/f.txt": "x"}


@pytest.mark.anyio
async def test_the_trash_is_beside_a_sqlite_store_else_in_dot_loopengine(tmp_path: Path) -> None:
    async with Store.open(f"sqlite:///{tmp_path / 'data' / 'loopengine.db'}") as store:
        beside = trash_folder(_ctx(tmp_path, store=store))
    async with memory_store() as store:
        in_base = trash_folder(_ctx(tmp_path, store=store))
    assert beside == tmp_path / "data" / "loopengine.db-trash"
    assert in_base == tmp_path.parent / ".loopengine" / "trash"


def test_a_rerun_of_a_recorded_call_returns_its_result_without_acting(root: Path) -> None:
    (root / "a.txt").write_text("a")
    first = _call(root, "file.move", source="a.txt", target="b.txt")
    assert _call(root, "file.move", source="a.txt", target="b.txt") == first
    assert _undo(root) == _undo(root)
    assert _tree(root) == {"a.txt": "a"}


def test_a_call_that_stopped_half_way_is_not_run_again(root: Path) -> None:
    (root / "a.txt").write_text("a")
    trash = Path(_call(root, "file.delete", path="a.txt")["trash"])
    (trash / "record.json").unlink()
    with pytest.raises(SkillError, match="stopped half way: see "):
        _call(root, "file.delete", path="a.txt")
    assert (trash / "entry").read_text() == "a"


def test_undo_of_a_delete_never_replaces_what_took_its_place(root: Path) -> None:
    (root / "a.txt").write_text("old")
    trash = Path(_call(root, "file.delete", path="a.txt")["trash"])
    (root / "a.txt").write_text("new")
    with pytest.raises(SkillError, match=re.escape("'a.txt' exists already")):
        _undo(root)
    assert ((root / "a.txt").read_text(), (trash / "entry").read_text()) == ("new", "old")


def test_undo_outside_a_rollback_is_refused(root: Path) -> None:
    with pytest.raises(SkillError, match="name it as that action's rollback_skill"):
        _REGISTRY.skill("file.undo").fn(_ctx(root))


def test_undo_with_nothing_recorded_says_so(root: Path) -> None:
    with pytest.raises(SkillError, match="no file action is recorded"):
        _undo(root, "e9:act:other:0:1")


# dry run


def test_a_dry_run_changes_nothing_and_names_the_paths(root: Path, tmp_path: Path) -> None:
    (root / "a.txt").write_text("a")
    ctx = _ctx(root, dry_run=True)
    calls = [
        ("file.write", {"path": "new/f.txt", "content": "xy"}),
        ("file.move", {"source": "a.txt", "target": "b/a.txt"}),
        ("file.delete", {"path": "a.txt"}),
    ]
    results = [_REGISTRY.skill(name).fn(ctx, **params) for name, params in calls]
    assert results == [
        {"dry_run": True, "path": "new/f.txt", "mode": "overwrite", "bytes": 2, "exists": False},
        {"dry_run": True, "source": "a.txt", "target": "b/a.txt", "kind": "file"},
        {"dry_run": True, "path": "a.txt", "kind": "file"},
    ]
    assert _tree(tmp_path) == {"root": "/", "root/a.txt": "a"}


def test_a_dry_run_refuses_what_the_run_would(root: Path) -> None:
    with pytest.raises(SkillError, match=re.escape("'gone.txt' does not exist")):
        _REGISTRY.skill("file.delete").fn(_ctx(root), path="gone.txt", dry_run=True)


# hostile paths


def test_a_path_with_dotdot_writes_nothing_outside(root: Path, outside: Path) -> None:
    with pytest.raises(SkillError, match=re.escape("has '..'")):
        _call(root, "file.write", path="../outside/secret.txt", content="owned")
    assert (outside / "secret.txt").read_text() == "keep"


def test_an_absolute_path_outside_the_root_is_refused(root: Path, outside: Path) -> None:
    with pytest.raises(SkillError, match=re.escape("outside actions.root")):
        _call(root, "file.delete", path=str(outside / "secret.txt"))
    assert (outside / "secret.txt").exists()


def test_an_absolute_path_inside_the_root_is_taken(root: Path) -> None:
    _call(root, "file.write", path=str(root / "f.txt"), content="x")
    assert (root / "f.txt").read_text() == "x"


def test_a_folder_link_pointing_out_is_not_followed(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside)
    for name, params in [
        ("file.write", {"path": "link/secret.txt", "content": "owned"}),
        ("file.delete", {"path": "link/secret.txt"}),
        ("file.move", {"source": "link/secret.txt", "target": "mine.txt"}),
    ]:
        with pytest.raises(SkillError, match="'link' is a link: links are not followed"):
            _call(root, name, **params)
    assert _tree(outside) == {"secret.txt": "keep"}


def test_a_file_link_pointing_out_is_not_written_through(root: Path, outside: Path) -> None:
    (root / "f.txt").symlink_to(outside / "secret.txt")
    for mode in ("overwrite", "append"):
        with pytest.raises(SkillError, match=re.escape("'f.txt' is a link")):
            _call(root, "file.write", path="f.txt", content="owned", mode=mode)
    assert (outside / "secret.txt").read_text() == "keep"


def test_a_link_is_moved_and_deleted_as_a_link(root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside)
    _call(root, "file.move", source="out", target="moved")
    _call(root, "file.delete", path="moved", key="e1:act:b:0:1")
    assert _tree(outside) == {"secret.txt": "keep"}
    assert _tree(root) == {}


def test_a_place_stays_in_its_folder_when_a_link_is_swapped_in(root: Path, outside: Path) -> None:
    (root / "sub").mkdir()
    with Root(root, ()) as opened:
        place = opened.reach("sub/f.txt")
        (root / "sub").rename(root / "sub.real")
        (root / "sub").symlink_to(outside)
        os.close(os.open(place.name, os.O_CREAT | os.O_WRONLY, dir_fd=place.folder))
    assert (root / "sub.real" / "f.txt").exists()
    assert _tree(outside) == {"secret.txt": "keep"}


def test_a_link_swapped_in_during_the_actions_never_leads_out(root: Path, outside: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("in")
    stop = threading.Event()

    (root / "link").symlink_to(outside)
    names = os.fsencode(root / "sub"), os.fsencode(root / "link")
    exchange = ctypes.CDLL(None, use_errno=True).renameat2

    def swap() -> None:
        while not stop.is_set():  # "sub" is the folder or the link, and never missing
            assert exchange(_AT_FDCWD, names[0], _AT_FDCWD, names[1], _RENAME_EXCHANGE) == 0

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        for index in range(300):
            for name, params in [
                ("file.write", {"path": "sub/secret.txt", "content": "owned", "mode": "append"}),
                ("file.delete", {"path": "sub/secret.txt"}),
                ("file.move", {"source": "sub/secret.txt", "target": "taken.txt"}),
            ]:
                with suppress(SkillError):
                    _call(root, name, key=f"e1:act:{name}:{index}:1", **params)
    finally:
        stop.set()
        swapper.join()
    assert _tree(outside) == {"secret.txt": "keep"}


# what is never touched


def test_the_store_and_the_folder_holding_it_are_never_touched(root: Path) -> None:
    (root / "state").mkdir()
    store = root / "state" / "loopengine.db"
    store.write_text("db")
    ctx = _ctx(root, private=(store,))
    for name, params in [
        ("file.delete", {"path": "state/loopengine.db"}),
        ("file.write", {"path": "state/loopengine.db", "content": ""}),
        ("file.move", {"source": "state", "target": "elsewhere"}),
    ]:
        with pytest.raises(SkillError, match="not open to actions"):
            _REGISTRY.skill(name).fn(ctx, **params)
    assert store.read_text() == "db"


def test_the_trash_is_never_touched(root: Path) -> None:
    (root / "a.txt").write_text("a")
    inside = replace(_ctx(root), base=root)
    _REGISTRY.skill("file.delete").fn(inside, path="a.txt")
    again = replace(inside, idempotency_key="e1:act:b:0:1")
    with pytest.raises(SkillError, match="not open to actions"):
        _REGISTRY.skill("file.delete").fn(again, path=".loopengine/trash")


# through the engine

_CLEANUP = """\
id: cleanup
trigger: {type: manual}
params:
  stale: {type: array, default: []}
  limit: {type: integer, default: 10}
decide:
  fallback_action: archive
act:
  actions:
    - action_id: archive
      skill_id: file.move
      items: input.stale
      max_affected: 10
      params: {source: '${ item }', target: 'archive/${ item }'}
      rollback_skill: file.undo
validate:
  assertions:
    - {expression: 'length(act.archive.result) <= input.limit'}
  auto_rollback: {enabled: true}
"""


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    for name in ("a.log", "b.log", "keep.txt"):
        (tmp_path / name).write_text(name)
    async with open_harness(tmp_path, builtin_registry()) as opened:
        yield opened


def _files(folder: Path) -> list[str]:
    """What is under ``folder`` besides the loop and the store (its trash included)."""
    found = (str(path.relative_to(folder)) for path in folder.rglob("*"))
    return sorted(name for name in found if not name.startswith(("loop", ".loopengine")))


@pytest.mark.anyio
async def test_a_loop_moves_files_and_validate_keeps_them_moved(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_CLEANUP), inputs={"stale": ["a.log", "b.log"]})
    assert done.outcome is Outcome.COMPLETED
    assert _files(harness.tmp) == ["archive", "archive/a.log", "archive/b.log", "keep.txt"]
    [call, _] = harness.phase(await harness.view(done), "act")["data"]["calls"]
    assert call["result"] == {"source": "a.log", "target": "archive/a.log", "kind": "file"}


@pytest.mark.anyio
async def test_a_failed_assertion_moves_the_files_back(harness: Harness) -> None:
    inputs = {"stale": ["a.log", "b.log"], "limit": 1}
    done = await harness.engine.run(harness.loop(_CLEANUP), inputs=inputs)
    assert done.outcome is Outcome.ROLLED_BACK
    assert _files(harness.tmp) == ["a.log", "b.log", "keep.txt"]


@pytest.mark.anyio
async def test_a_dry_run_of_the_loop_moves_nothing(harness: Harness) -> None:
    unchecked = _CLEANUP.partition("validate:")[0]
    done = await harness.engine.run(
        harness.loop(unchecked), inputs={"stale": ["a.log"]}, dry_run=True
    )
    assert done.outcome is Outcome.DRY_RUN
    assert _files(harness.tmp) == ["a.log", "b.log", "keep.txt"]
    [call] = harness.phase(await harness.view(done), "act")["data"]["calls"]
    assert call["result"] == {
        "dry_run": True,
        "source": "a.log",
        "target": "archive/a.log",
        "kind": "file",
    }
