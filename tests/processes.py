"""A pytest plugin: no test leaves a process behind. A process still running when the test or
fixture that started it ends is killed and waited for, so it never surfaces later as a
``ResourceWarning`` (an error here) in an unrelated test; a test that passed fails in its teardown
for leaving it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Generator
from typing import Any

import pytest

__all__ = ["pytest_configure"]


class _Reaper:
    """Tracks each ``subprocess.Popen`` by what started it: the fixture being set up, else the
    test being run."""

    def __init__(self) -> None:
        self.owners: list[object] = []
        self.started: dict[object, list[subprocess.Popen[Any]]] = {}
        self.failed: set[str] = set()

    def track(self, process: subprocess.Popen[Any]) -> None:
        owner = self.owners[-1] if self.owners else None
        self.started.setdefault(owner, []).append(process)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.owners.append(item)
        try:
            return (yield)
        finally:
            self.owners.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[object]
    ) -> Generator[None, object, object]:
        self.owners.append(fixturedef)
        try:
            return (yield)
        finally:
            self.owners.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, Any, Any]:
        report = yield
        if report.failed:
            self.failed.add(item.nodeid)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        """Once the test's fixtures that end with it are torn down, what they and the test
        started has exited; a test that failed already is not failed again for it."""
        try:
            yield
        finally:
            left = self.reap(lambda owner: _ended(owner, item))
            failed = item.nodeid in self.failed
            self.failed.discard(item.nodeid)
        if left and not failed:
            pytest.fail("left running, now killed: " + "; ".join(left), pytrace=False)

    def reap(self, ended: Callable[[object], bool]) -> list[str]:
        """Kill and wait for the running processes of the owners ``ended`` accepts; what each
        was, by owner."""
        left = []
        for owner in [owner for owner in self.started if ended(owner)]:
            for process in self.started.pop(owner):
                if process.poll() is None:
                    process.kill()
                    process.wait()
                    left.append(f"{_name(owner)} started {process.args!r}")
        return left


def _ended(owner: object, item: pytest.Item) -> bool:
    if isinstance(owner, pytest.FixtureDef):
        return owner.cached_result is None
    return owner is item


def _name(owner: object) -> str:
    if isinstance(owner, pytest.FixtureDef):
        return f"fixture {owner.argname!r}"
    return "the test" if isinstance(owner, pytest.Item) else "the session"


def pytest_configure(config: pytest.Config) -> None:
    reaper = _Reaper()
    original = subprocess.Popen.__init__

    def tracked(process: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        original(process, *args, **kwargs)
        reaper.track(process)

    patch = pytest.MonkeyPatch()
    patch.setattr(subprocess.Popen, "__init__", tracked)
    config.add_cleanup(lambda: reaper.reap(lambda _: True))
    config.add_cleanup(patch.undo)
    config.pluginmanager.register(reaper, "processes")
