"""``examples/actions`` as a user runs it, from its folder: the disk cleanup (shell, approval,
file.move, rollback), the uptime check and its alert (http.request, webhook.send to a real
receiver, under a real daemon) and the two-loop chain (event.emit, file.write, under a daemon)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from loopengine.testing import WebhookReceiver
from tests.conftest import ROOT
from tests.daemon.conftest import Workspace
from tests.waiting import wait_until

EXAMPLE = ROOT / "examples" / "actions"
SECRET = "whsec_HQ1EWSWIHUvCuQR2kEcFr5EKy/BSlcIf"
RECEIVER_PORT, SITE_PORT = 8788, 8789
"""The ports the example's files name, replaced in the test's copy by ports free here."""


class Site:
    """The site the uptime check watches, on 127.0.0.1: it answers ``status`` to every GET."""

    def __init__(self) -> None:
        self.status = 200
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self.send_response(site.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _json(folder: Workspace, *args: str) -> Any:
    """What a command prints with ``--json``; a run that failed (exit 1) prints its record too."""
    done = folder.cli(*args, "--json", check=False)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(secret=SECRET) as started:
        yield started


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as started:
        yield started


@pytest.fixture
def folder(tmp_path: Path, receiver: WebhookReceiver, site: Site) -> Iterator[Workspace]:
    """The example, its ports replaced by the receiver's and the site's, its daemon's API on a
    free port."""
    path = tmp_path / "actions"
    shutil.copytree(EXAMPLE, path, ignore=shutil.ignore_patterns(".loopengine"))
    ports = {RECEIVER_PORT: receiver.url.rsplit(":", 1)[1], SITE_PORT: str(site.port)}
    for file in path.glob("*.yaml"):
        text = file.read_text()
        for port, free in ports.items():
            text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{free}")
        file.write_text(text)
    config = path / "loopengine.yaml"
    assert "daemon: {loops: .}" in config.read_text()
    config.write_text(config.read_text().replace("{loops: .}", "{loops: ., port: 0}"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPENGINE_")}
    env |= {"NO_COLOR": "1", "ALERT_HOOK_SECRET": SECRET}
    started = Workspace(path, env)
    yield started
    try:
        for daemon in started.daemons:
            assert daemon.stop() == 0
    finally:
        started.close()


def _files(folder: Path, *names: str, mb: int, days: int) -> None:
    for name in names:
        file = folder / name
        file.parent.mkdir(parents=True, exist_ok=True)
        with file.open("wb") as stream:
            stream.truncate(mb * 1_048_576)
        stamp = file.stat().st_mtime - days * 86_400
        os.utime(file, (stamp, stamp))


def test_the_examples_validate(folder: Workspace) -> None:
    done = folder.cli("validate", ".", check=False)
    assert (done.returncode, done.stdout) == (0, "✓ 5 loops valid\n")


def test_the_disk_cleanup_archives_big_old_files_once_approved(folder: Workspace) -> None:
    downloads = folder.root / "downloads"
    _files(downloads, "a.iso", "b.iso", mb=101, days=40)
    _files(downloads, "new.iso", mb=101, days=0)
    _files(downloads, "small.txt", mb=1, days=40)
    waiting = _json(folder, "run", "disk_cleanup.yaml")
    assert waiting["outcome"] == "awaiting_approval"
    assert [p["items"] for p in waiting["plan"]] == [["downloads/a.iso", "downloads/b.iso"]]
    assert sorted(p.name for p in downloads.iterdir()) == ["a.iso", "b.iso", "new.iso", "small.txt"]
    done = _json(folder, "approve", waiting["execution_id"], "--note", "old ISOs, go")
    assert done["outcome"] == "completed"
    assert sorted(p.name for p in downloads.iterdir()) == ["new.iso", "small.txt"]
    archived = folder.root / "archive" / "downloads"
    assert sorted(p.name for p in archived.iterdir()) == ["a.iso", "b.iso"]


def test_the_disk_cleanup_puts_every_file_back_unless_all_were_archived(folder: Workspace) -> None:
    """Past ``max_affected`` (20), the assertion that every file found was archived fails, and
    file.undo moves back those that were."""
    downloads = folder.root / "downloads"
    names = [f"f{index:02}.iso" for index in range(21)]
    _files(downloads, *names, mb=101, days=40)
    waiting = _json(folder, "run", "disk_cleanup.yaml")
    done = _json(folder, "approve", waiting["execution_id"])
    assert done["outcome"] == "rolled_back"
    assert sorted(p.name for p in downloads.iterdir()) == names
    assert not (folder.root / "archive").exists()


def test_the_disk_cleanup_detects_nothing_without_big_old_files(folder: Workspace) -> None:
    _files(folder.root / "downloads", "new.iso", mb=101, days=0)
    done = folder.cli("run", "disk_cleanup.yaml", check=False)
    assert done.returncode == 0, done.stdout
    assert "nothing_detected" in done.stdout.splitlines()[0]


def test_the_uptime_check_alerts_once_when_it_fails_twice_in_a_row(
    folder: Workspace, receiver: WebhookReceiver, site: Site
) -> None:
    folder.start(loops=None)
    folder.cli("pause", "uptime_check")  # the test makes each check
    assert _json(folder, "run", "uptime_check.yaml")["outcome"] == "completed"
    site.status = 503
    checks = [_json(folder, "run", "uptime_check.yaml") for _ in range(2)]
    assert [check["outcome"] for check in checks] == ["failed", "failed"]
    wait_until(lambda: receiver.deliveries, "no alert came")
    assert _json(folder, "run", "uptime_check.yaml")["outcome"] == "failed"

    def alerts() -> list[str] | None:
        found = _json(folder, "history", "uptime_alert")["executions"]
        return [row["outcome"] for row in found] if len(found) == 2 else None

    assert wait_until(alerts, "the third check ran no alert loop") == ["skipped", "completed"]
    (delivery,) = receiver.deliveries
    assert delivery.verified
    assert delivery.body == {
        "down": f"http://127.0.0.1:{site.port}/health",
        "check": checks[1]["execution_id"],
    }


def test_the_inventory_announces_and_the_report_writes_it_down(folder: Workspace) -> None:
    _files(folder.root / "downloads", "a.iso", "b.iso", mb=0, days=0)
    folder.start(loops=None)
    done = folder.cli("trigger", "inventory", "--wait", check=False)
    assert done.returncode == 0, done.stdout
    report = folder.root / "reports" / "inventory.txt"
    wait_until(report.exists, "no report was written")
    stamp, name, files = report.read_text().split()
    assert (name, files) == ("downloads", "files=2")
    assert stamp.startswith(str(datetime.now(UTC).year))
    (row,) = _json(folder, "history", "inventory_report")["executions"]
    assert (row["trigger_type"], row["outcome"]) == ("event", "completed")
