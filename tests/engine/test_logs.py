"""An execution's log: what skills say through ``ctx.logger`` (INFO and above, masked, bounded)
is kept with the execution's commits, in order, with the phase and step that said it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from loopengine._secrets import remember
from loopengine.contract import Outcome
from loopengine.engine._logs import (
    MAX_LINES,
    MAX_MESSAGE,
    MAX_STEP,
    ExecutionLog,
    StepLogger,
    level_name,
)
from loopengine.skills import Registry
from loopengine.store import logs
from tests.engine.conftest import Harness, open_harness

_LOGGER = logging.getLogger("tests.engine.logs")


def _logger(log: ExecutionLog) -> StepLogger:
    return StepLogger(_LOGGER, log, "act", "fix_all")


def test_info_and_above_are_kept_with_their_phase_step_and_level() -> None:
    log = ExecutionLog(lambda: 10.0)
    logger = _logger(log)
    logger.debug("not kept")
    logger.info("fixed %d pages", 3)
    logger.error("could not fix %s", "/about")
    assert log.take() == (
        logs.LogLine(10.0, "INFO", "act", "fix_all", "fixed 3 pages"),
        logs.LogLine(10.0, "ERROR", "act", "fix_all", "could not fix /about"),
    )
    assert log.take() == ()


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (20, "INFO"),
        (25, "INFO"),
        (30, "WARNING"),
        (45, "ERROR"),
        (50, "CRITICAL"),
        (100, "CRITICAL"),
    ],
)
def test_a_custom_level_reads_as_the_standard_one_it_passes(level: int, name: str) -> None:
    assert level_name(level) == name


def test_a_step_name_is_cut_to_what_the_store_keeps() -> None:
    log = ExecutionLog(lambda: 0.0)
    StepLogger(_LOGGER, log, "act", "s" * (MAX_STEP + 50)).log(100, "loud")
    [line] = log.take()
    assert (line.level, line.step) == ("CRITICAL", "s" * MAX_STEP)


def test_lines_are_kept_whatever_the_process_logging_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = ExecutionLog(lambda: 0.0)
    with caplog.at_level(logging.ERROR, logger=_LOGGER.name):
        _logger(log).info("kept here only")
    assert [line.message for line in log.take()] == ["kept here only"]
    assert caplog.records == []


def test_the_process_log_gets_the_record_with_the_phase_and_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger=_LOGGER.name):
        _logger(ExecutionLog(lambda: 0.0)).info("hello", extra={"page": 3})
    [record] = caplog.records
    assert (record.getMessage(), record.phase, record.step, record.page) == (  # type: ignore[attr-defined]
        "hello",
        "act",
        "fix_all",
        3,
    )


def test_a_logged_exception_keeps_its_type_and_message() -> None:
    log = ExecutionLog(lambda: 0.0)
    try:
        raise ValueError("no such page")
    except ValueError:
        _logger(log).exception("fixing failed")
    assert log.take()[0].message == "fixing failed: ValueError: no such page"


def test_a_format_that_does_not_fit_its_arguments_is_shown_with_them() -> None:
    log = ExecutionLog(lambda: 0.0)
    _logger(log).info("%d pages", "many")
    assert log.take()[0].message == "%d pages ('many',)"


def test_a_known_secret_is_masked() -> None:
    remember("s3cr3t-value-123")
    log = ExecutionLog(lambda: 0.0)
    _logger(log).info("calling with %s", "s3cr3t-value-123")
    assert log.take()[0].message == "calling with ***"


def test_a_long_line_is_cut_and_says_how_much() -> None:
    log = ExecutionLog(lambda: 0.0)
    _logger(log).info("x" * (MAX_MESSAGE + 10))
    message = log.take()[0].message
    assert message == "x" * MAX_MESSAGE + "… (10 characters cut)"


def test_lines_past_the_bound_are_counted_once_per_take() -> None:
    log = ExecutionLog(lambda: 0.0)
    logger = _logger(log)
    for number in range(MAX_LINES + 5):
        logger.info("line %d", number)
    taken = log.take()
    assert len(taken) == MAX_LINES + 1
    assert taken[-1].level == "WARNING"
    assert taken[-1].message == f"5 more lines not kept (an execution keeps {MAX_LINES:,})"
    StepLogger(_LOGGER, log, "validate", "check").info("one more")
    assert log.take() == (
        logs.LogLine(
            0.0,
            "WARNING",
            "validate",
            "check",
            f"1 more lines not kept (an execution keeps {MAX_LINES:,})",
        ),
    )
    assert log.take() == ()


_CHATTY = """\
id: chatty
trigger: {type: manual}
durability: DURABILITY
analyze:
  analysis_steps:
    - {name: count, skill_id: chatty, params: {lines: 2, message: "analysed %d"}}
decide:
  fallback_action: fix_all
act:
  max_retries: 1
  actions:
    - {action_id: fix_all, skill_id: flaky, params: {failures: 1}}
"""


@pytest.mark.anyio
@pytest.mark.parametrize("durability", ["phase", "execution"])
async def test_an_execution_keeps_what_its_skills_logged_in_order(
    harness: Harness, durability: str
) -> None:
    loop = harness.loop(_CHATTY.replace("DURABILITY", durability))
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.COMPLETED
    page = await harness.store.read(logs.lines_of, done.execution_id, 0, 100)
    said = [(line.phase, line.step, line.level) for line in page.lines]
    assert said == [
        ("analyze", "count", "INFO"),
        ("analyze", "count", "INFO"),
        ("act", "fix_all", "INFO"),
    ]
    assert [line.message for line in page.lines[:2]] == ["analysed 1", "analysed 2"]
    assert page.lines[2].message.startswith("attempt 1 of 2 failed, retrying in ")
    assert page.status == "finished"


@pytest.mark.anyio
async def test_each_line_is_kept_once_across_commits(
    tmp_path: Path, engine_registry: Registry
) -> None:
    async with open_harness(tmp_path, engine_registry) as opened:
        loop = opened.loop(_CHATTY.replace("DURABILITY", "phase"))
        first = await opened.engine.run(loop)
        second = await opened.engine.run(loop)
        pages = [
            await opened.store.read(logs.lines_of, done.execution_id, 0, 100)
            for done in (first, second)
        ]
    assert [len(page.lines) for page in pages] == [3, 3]
    assert pages[1].after > pages[0].after
