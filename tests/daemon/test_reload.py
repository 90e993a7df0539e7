"""The loops folder is reloaded when its file system reports a change (the daemon does not scan
it every second), and scanned every second instead when it cannot be watched.

A plugin, loaded in the daemon's process, sets how the folder is watched: scans without a
reported change a day apart, or a watcher that cannot start (no inotify watch left).
"""

from __future__ import annotations

import time

from tests.daemon.conftest import BY_HAND, Workspace

RARE_SCANS = """\
from loopengine.daemon import _daemon

_daemon.RESCAN_S = 86_400.0
"""
NO_WATCHER = """\
import watchfiles


def _exhausted(*paths, **options):
    raise OSError(28, "inotify watch limit reached")


watchfiles.awatch = _exhausted
"""


IDLE = """

from loopengine import skill


@skill
def idle(ctx):
    return {}
"""


def _with_plugin(workspace: Workspace, source: str) -> None:
    (workspace.root / "watching.py").write_text(source + IDLE)
    (workspace.root / "loopengine.yaml").write_text("daemon: {port: 0}\nplugins: [./watching.py]\n")


def _loaded(loop_id: str) -> object:
    return lambda line: line.get("kind") == "load" and line.get("loop") == loop_id


def test_a_file_written_into_the_watched_folder_is_loaded_without_a_scan_due(
    workspace: Workspace,
) -> None:
    _with_plugin(workspace, RARE_SCANS)
    daemon = workspace.start()
    try:
        time.sleep(2)  # past the scan the watcher makes once it watches
        (workspace.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
        daemon.wait_for(_loaded("by_hand"))
    finally:
        assert daemon.stop() == 0


def test_a_folder_that_cannot_be_watched_is_scanned_every_second_as_the_log_says(
    workspace: Workspace,
) -> None:
    _with_plugin(workspace, NO_WATCHER)
    daemon = workspace.start()
    try:
        said = daemon.wait_for(lambda line: line.get("kind") == "error")
        (workspace.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
        daemon.wait_for(_loaded("by_hand"))
    finally:
        assert daemon.stop() == 0
    assert said["message"] == (
        "cannot watch the loops folder (OSError: [Errno 28] inotify watch limit reached): "
        "scanning it every 1 s"
    )
