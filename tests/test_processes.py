"""No test leaves a process behind (tests/processes.py): what a test or fixture leaves running
is killed when it ends and fails that test (once), never a later one through a
``ResourceWarning``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

LEAVING = """\
import subprocess
import sys

import pytest

KEPT = []


def _start(name):
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(name, "w") as pid:
        pid.write(str(process.pid))
    KEPT.append(process)


@pytest.fixture(scope="module")
def server():
    _start("fixture.pid")
    yield


def test_leaves_a_process():
    _start("test.pid")


def test_uses_a_server_it_never_stops(server):
    pass


def test_fails_while_its_process_runs():
    _start("failed.pid")
    assert False


def test_unrelated():
    KEPT.clear()


def test_unrelated_too():
    pass
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_what_a_test_or_fixture_leaves_running_is_killed_and_fails_it_and_no_other(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_leaving=LEAVING)
    result = pytester.runpytest_inprocess(
        "-p", "tests.processes", "-W", "error", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=4, failed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_process*",
            "*left running, now killed: the test started*",
            "*ERROR at teardown of test_unrelated_too*",
            "*left running, now killed: fixture 'server' started*",
        ]
    )
    result.stdout.no_fnmatch_line("*teardown of test_fails_while_its_process_runs*")
    for name in ("test.pid", "fixture.pid", "failed.pid"):
        assert _gone(int(Path(pytester.path, name).read_text()))
