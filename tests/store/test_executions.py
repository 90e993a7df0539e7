"""Where an execution starts from: its loop's last finished run and learned state, read in one
statement (a claim reads it for every execution)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.store import ExecutionRow, PhaseResult, executions, learning
from loopengine.store._database import create_engine
from loopengine.store._migrations import migrate

PHASES = ("detect", "analyze", "decide")


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened, opened.begin():
        migrate(opened)
        yield opened
    engine.dispose()


def _run(
    execution_id: str, started_at: float, completed_at: float | None = None, dry_run: bool = False
) -> ExecutionRow:
    """An execution of ``tick``, finished when it has ``completed_at``."""
    finished = completed_at is not None
    return ExecutionRow(
        id=execution_id,
        loop_id="tick",
        loop_version="v",
        loop_file="tick.yaml",
        status="finished" if finished else "running",
        job_id=execution_id,
        trigger_type="manual",
        durability="phase",
        dry_run=dry_run,
        started_at=started_at,
        completed_at=completed_at,
        outcome="completed" if finished else None,
    )


def _statements(connection: sa.Connection) -> list[str]:
    statements: list[str] = []
    driver = connection.connection.driver_connection
    driver.set_trace_callback(statements.append)  # type: ignore[union-attr]
    return statements


def test_a_loop_starts_from_its_last_finished_run_and_learned_state_in_one_statement(
    connection: sa.Connection,
) -> None:
    for row in (
        _run("first", 1.0, 2.0),
        _run("last", 3.0, 4.0),
        _run("dry", 5.0, 6.0, dry_run=True),
        _run("running", 7.0),
    ):
        executions.insert_execution(connection, row)
    learning.put_state(connection, "tick", {"score": 0.5}, 3, 4.0, 4.0)
    statements = _statements(connection)
    start = executions.starting_point(connection, "tick")
    assert start == (
        executions.LastRun("completed", 4.0, 3.0),
        learning.LearnedState({"score": 0.5}, 3, 4.0),
    )
    assert len(statements) == 1


def test_a_loop_never_run_starts_from_nothing(connection: sa.Connection) -> None:
    executions.insert_execution(connection, _run("other", 1.0))
    assert executions.starting_point(connection, "tick") == (None, None)


def test_a_loop_with_runs_and_no_learned_state_starts_from_its_last_run_alone(
    connection: sa.Connection,
) -> None:
    executions.insert_execution(connection, _run("last", 3.0, 4.0))
    assert executions.starting_point(connection, "tick") == (
        executions.LastRun("completed", 4.0, 3.0),
        None,
    )


def test_phases_of_joined_commits_are_one_row_read_back_in_order(
    connection: sa.Connection,
) -> None:
    detect, analyze, decide = (PhaseResult(name, 1.0, 2.0, True) for name in PHASES)
    joined = executions.PhaseRows.of(1, [detect]).then(
        executions.PhaseRows.of(3, [analyze, decide])
    )
    executions.insert_execution(connection, _run("e1", 1.0))
    executions.insert_phases(connection, "e1", joined)
    assert executions.last_seq(connection, "e1") == 3
    assert executions.phases_of(connection, "e1") == [detect, analyze, decide]


_EARLIER = executions.LastRun("completed", 4.0, 3.0)
_LATER = executions.LastRun("failed", 6.0, 5.0)
_FEWER = learning.LearnedState({"score": 0.5}, 3, 4.0)
_MORE = learning.LearnedState({"score": 0.7}, 4, 6.0)


@pytest.mark.parametrize(
    ("start", "left", "then"),
    [
        ((None, None), (_EARLIER, None), (_EARLIER, None)),
        ((_EARLIER, _FEWER), (_LATER, None), (_LATER, _FEWER)),
        ((_EARLIER, _FEWER), (_LATER, _MORE), (_LATER, _MORE)),
        ((_LATER, _MORE), (None, _FEWER), (_LATER, _FEWER)),
        ((_LATER, _MORE), (_EARLIER, None), (_LATER, _MORE)),
    ],
    ids=["first-run", "no-learning", "learned", "state-written-last", "a-later-run-read"],
)
def test_a_start_after_a_commit_holds_the_later_run_and_the_state_written_last(
    start: executions.StartingPoint, left: executions.Left, then: executions.StartingPoint
) -> None:
    assert executions.started_after(start, left) == then
