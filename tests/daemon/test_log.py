"""The daemon's log masks known secrets in a line's message and fields, as text and as JSON, and
writes a job's routine lines together within ``FLUSH_S``, in order with what else is printed."""

from __future__ import annotations

import asyncio
import io
import json
from functools import partial

import anyio
import pytest

import loopengine.api
from loopengine._secrets import MaskedStream, remember
from loopengine.commands._console import Console
from loopengine.commands.daemon import run_daemon_command
from loopengine.daemon import DaemonLog
from loopengine.daemon._log import FLUSH_S

SECRET = "lg-8e1f0c3b9a27d564"


@pytest.mark.parametrize("as_json", [False, True])
def test_a_line_masks_known_secrets_in_its_message_and_fields(as_json: bool) -> None:
    remember(SECRET)
    stream = io.StringIO()
    DaemonLog(stream, as_json=as_json).line("error", f"refused {SECRET}", data={SECRET: SECRET})
    written = stream.getvalue()
    assert SECRET not in written
    if as_json:
        assert json.loads(written)["message"] == "refused ***"
        assert json.loads(written)["data"] == {"***": "***"}
    else:
        assert written.endswith(' data="{\\"***\\": \\"***\\"}" refused ***\n')


class _Flushes(io.StringIO):
    """A stream keeping what had been written at each flush, and counting its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


def test_a_line_outside_an_event_loop_is_flushed_at_once() -> None:
    stream = _Flushes()
    DaemonLog(stream).line("end", loop="a", job="j1")
    assert stream.flushed == [stream.getvalue()]


@pytest.mark.anyio
async def test_routine_lines_in_an_event_loop_go_out_together_within_the_flush_delay() -> None:
    stream = _Flushes()
    log = DaemonLog(stream)
    log.line("start", loop="a", job="j1")
    log.line("end", loop="a", job="j1", outcome="completed")
    assert stream.getvalue() == ""
    await anyio.sleep(FLUSH_S * 2)
    assert stream.flushed == [stream.getvalue()]
    assert len(stream.getvalue().splitlines()) == 2
    assert stream.writes == 1


@pytest.mark.anyio
async def test_an_error_line_is_flushed_at_once_with_the_routine_lines_before_it() -> None:
    stream = _Flushes()
    log = DaemonLog(stream)
    log.line("start", loop="a", job="j1")
    log.line("error", "cannot claim a job")
    assert [len(text.splitlines()) for text in stream.flushed] == [2]
    await anyio.sleep(FLUSH_S * 2)
    assert stream.writes == 1


def test_a_flush_due_on_an_event_loop_that_closed_is_made_by_the_next_line() -> None:
    stream = _Flushes()
    log = DaemonLog(stream)

    async def one_line() -> None:
        log.line("start", loop="a", job="j1")

    asyncio.run(one_line())
    log.line("end", loop="a", job="j1")
    assert stream.flushed == [stream.getvalue()]
    assert len(stream.getvalue().splitlines()) == 2


@pytest.mark.anyio
async def test_what_a_skill_prints_comes_after_the_lines_written_before_it() -> None:
    stream = _Flushes()
    log = DaemonLog(stream)
    printed = MaskedStream(stream, log.write_waiting)
    log.line("start", loop="a", job="j1")
    printed.write("the skill says hello\n")
    log.line("end", loop="a", job="j1")
    await anyio.sleep(FLUSH_S * 2)
    lines = stream.getvalue().splitlines()
    assert [line.split()[1] for line in (lines[0], lines[2])] == ["start", "end"]
    assert lines[1] == "the skill says hello"


@pytest.mark.anyio
async def test_the_lines_waiting_are_flushed_before_a_skill_prints_to_another_stream() -> None:
    stream, errors = _Flushes(), io.StringIO()
    log = DaemonLog(stream)
    warned = MaskedStream(errors, partial(log.write_waiting, flush=True))
    log.line("start", loop="a", job="j1")
    warned.write("a warning\n")
    assert [text.split()[1] for text in stream.flushed] == ["start"]


class _Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.anyio
async def test_a_stream_that_closed_before_a_flush_due_fails_the_next_line_not_routine() -> None:
    """A job's own lines do not fail it: the daemon's next other line (or its end) fails."""
    log = DaemonLog(_Closed())
    log.line("start", loop="a", job="j1")
    await anyio.sleep(FLUSH_S * 2)
    log.line("end", loop="a", job="j1")
    with pytest.raises(BrokenPipeError):
        log.line("error", "cannot claim a job")


def test_the_daemon_command_writes_the_lines_waiting_when_the_daemon_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def failing(config: object, folder: object, log: DaemonLog) -> int:
        log.line("start", loop="a", job="j1")
        raise RuntimeError("a bug")

    monkeypatch.setattr(loopengine.api, "run_daemon", failing)
    out = io.StringIO()
    with pytest.raises(RuntimeError):
        anyio.run(run_daemon_command, Console(out, io.StringIO()), None, None, False)
    assert "start" in out.getvalue()
