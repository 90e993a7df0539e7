"""The daemon's loops: the shipped autolearn loops it is given are scheduled beside the folder's,
unless a file of the folder defines their id; deleting that file gives the id back. A webhook
loop whose secret is not set is refused, alone."""

from __future__ import annotations

import gc
import io
import sys
import tracemalloc
from pathlib import Path

import pytest

from loopengine._resources import shipped_loop
from loopengine.contract import LoadReport, Loop, LoopLoader
from loopengine.daemon import DaemonLog, LoopFolder, _loops
from loopengine.daemon._loops import MAX_BUILT
from tests.daemon.test_intake_tasks import DECIDE, loader

AUTOTUNE = shipped_loop("autotune")


def _folder(path: Path) -> LoopFolder:
    assert AUTOTUNE is not None
    return LoopFolder(path, loader(), DaemonLog(io.StringIO()), fallbacks=(AUTOTUNE,))


def test_a_shipped_loop_is_scheduled_beside_the_folders(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("id: mine\ntrigger: {type: manual}\n" + DECIDE)
    changes = _folder(tmp_path).scan()
    assert sorted(found.id for found in changes.loaded) == ["autotune", "mine"]


def test_a_file_of_the_folder_with_its_id_wins_and_gives_it_back_when_deleted(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    folder.scan()
    mine = tmp_path / "autotune.yaml"
    mine.write_text("id: autotune\ntrigger: {type: manual}\n" + DECIDE)
    assert [found.file for found in folder.scan().loaded] == [str(mine)]
    mine.unlink()
    changes = folder.scan()
    assert ([found.file for found in changes.loaded], changes.removed) == ([str(AUTOTUNE)], ())


def test_the_shipped_folder_itself_loads_each_loop_once(tmp_path: Path) -> None:
    assert AUTOTUNE is not None
    folder = _folder(AUTOTUNE.parent)
    changes = folder.scan()
    assert [found.id for found in changes.loaded].count("autotune") == 1


class _FaultyLoader(LoopLoader):
    """A loader with a bug that shows on one file."""

    def load_file(self, path: Path, within: Path | None = None) -> LoadReport:
        if path.name == "bad.yaml":
            raise RuntimeError("a bug")
        return super().load_file(path, within)


def test_a_file_that_fails_to_load_is_refused_alone_with_a_log_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("id: bad\ntrigger: {type: manual}\n" + DECIDE)
    (tmp_path / "good.yaml").write_text("id: good\ntrigger: {type: manual}\n" + DECIDE)
    log = io.StringIO()
    working = loader()
    folder = LoopFolder(tmp_path, _FaultyLoader(working.env), DaemonLog(log))
    assert [found.id for found in folder.scan().loaded] == ["good"]
    assert f"file={tmp_path / 'bad.yaml'} cannot load: RuntimeError: a bug" in log.getvalue()


def _scanned_mine(tmp_path: Path) -> tuple[Path, LoopFolder, Loop]:
    """A folder holding the file of loop ``mine``, scanned: the file, the folder, the loop."""
    path = tmp_path / "mine.yaml"
    path.write_text("id: mine\ntrigger: {type: manual}\n" + DECIDE)
    folder = LoopFolder(tmp_path, loader(), DaemonLog(io.StringIO()))
    [loop] = folder.scan().loaded
    return path, folder, loop


def test_a_refused_version_gives_its_place_back_to_the_one_it_replaced(tmp_path: Path) -> None:
    path, folder, first = _scanned_mine(tmp_path)
    path.write_text("id: mine\ntrigger: {type: manual}\ndescription: second\n" + DECIDE)
    changes = folder.scan()
    [second] = changes.loaded
    assert changes.previous == {"mine": first}
    folder.refuse(second, changes.previous["mine"])
    assert folder.loops["mine"].version == first.version
    assert not folder.scan()
    path.unlink()
    assert folder.scan().removed == ("mine",)


def test_a_link_out_of_the_folder_is_logged_where_it_points_and_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secrets"
    secret.write_text("root:$6$saltsalt$Zm9vYmFyYmF6cXV4Zm9vYmFy:19700:0:99999:7:::\n")
    folder = tmp_path / "loops"
    folder.mkdir()
    (folder / "leak.yaml").symlink_to(secret)
    log = io.StringIO()
    assert not LoopFolder(folder, loader(), DaemonLog(log)).scan()
    assert f"a link to {secret}, outside {folder}: not read" in log.getvalue()
    assert "saltsalt" not in log.getvalue()


def test_a_webhook_loop_whose_secret_is_not_set_is_refused_alone_with_the_variable_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEVER_SET_HOOK_KEY", raising=False)
    hook = "trigger: {type: webhook, config: {path: x, secret: '${ secret.NEVER_SET_HOOK_KEY }'}}"
    (tmp_path / "hook.yaml").write_text(f"id: hook\n{hook}\n{DECIDE}")
    (tmp_path / "mine.yaml").write_text("id: mine\ntrigger: {type: manual}\n" + DECIDE)
    out = io.StringIO()
    changes = LoopFolder(tmp_path, loader(), DaemonLog(out)).scan()
    assert [found.id for found in changes.loaded] == ["mine"]
    error, skip = out.getvalue().splitlines()
    assert f"{tmp_path / 'hook.yaml'}:2:" in error
    assert "webhook secret $NEVER_SET_HOOK_KEY is not set: a webhook's secret must hold" in error
    assert "not scheduled" in skip


def test_the_folder_keeps_a_bounded_number_of_loops_built(tmp_path: Path) -> None:
    for index in range(MAX_BUILT + 10):
        (tmp_path / f"l{index}.yaml").write_text(
            f"id: l{index}\ntrigger: {{type: manual}}\n" + DECIDE
        )
    folder = LoopFolder(tmp_path, loader(), DaemonLog(io.StringIO()))
    folder.scan()
    assert len(folder.loops) == MAX_BUILT + 10
    assert len(folder.loops._built) == MAX_BUILT


def test_a_loop_no_longer_built_is_built_again_as_it_was_scanned(tmp_path: Path) -> None:
    path, folder, scanned = _scanned_mine(tmp_path)
    path.write_text("id: mine\ntrigger: {type: manual}\ndescription: not scanned yet\n" + DECIDE)
    folder.loops._built.clear()
    built = folder.loops["mine"]
    assert (built.version, built.spec) == (scanned.version, scanned.spec)


def test_a_scan_in_batches_lists_the_folder_once_and_loads_every_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(7):
        (tmp_path / f"l{index}.yaml").write_text(
            f"id: l{index}\ntrigger: {{type: manual}}\n" + DECIDE
        )
    listings: list[object] = []
    listed = _loops.find_loop_files
    monkeypatch.setattr(
        _loops, "find_loop_files", lambda folders: listings.append(1) or listed(folders)
    )
    folder = LoopFolder(tmp_path, loader(), DaemonLog(io.StringIO()))
    batches = [folder.scan(3)]
    while batches[-1].more:
        batches.append(folder.scan(3))
    loaded = [loop.id for batch in batches for loop in batch.loaded]
    assert (len(listings), [len(batch.loaded) for batch in batches]) == (1, [3, 3, 1])
    assert sorted(loaded) == [f"l{index}" for index in range(7)]
    assert not folder.scan(3)
    assert len(listings) == 2


MOST_BYTES_BESIDE_A_NAME = 150
"""What a scan stopped at ``most`` may keep of each file it left beside its name: its stamp and
place in the changed ones (a ``Path`` each took 360 bytes more)."""


def test_a_scan_in_batches_keeps_the_files_it_left_by_name(tmp_path: Path) -> None:
    """The loader warmed by a folder of one file first: what is kept is the listing's alone."""
    for index in range(2_001):
        (tmp_path / f"l{index}.yaml").write_text(
            f"id: l{index}\ntrigger: {{type: manual}}\n" + DECIDE
        )
    (tmp_path / "warm").mkdir()
    (tmp_path / "l0.yaml").rename(tmp_path / "warm" / "l0.yaml")
    LoopFolder(tmp_path / "warm", loader(), DaemonLog(io.StringIO())).scan()
    folder = LoopFolder(tmp_path, loader(), DaemonLog(io.StringIO()))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert folder.scan(1).more
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    name = sys.getsizeof(str(tmp_path / "l1000.yaml"))
    assert kept / 2_000 <= name + MOST_BYTES_BESIDE_A_NAME
