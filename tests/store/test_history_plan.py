"""``history`` reads the newest executions through an index: no table scan, no sort."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.store import _tables as tables
from loopengine.store import create_engine, migrate
from loopengine.store.executions import list_executions
from tests.store.old_schemas import migrated_to

HISTORY_INDEXES = (
    "ix_executions_started",
    "ix_executions_outcome_started",
    "ix_executions_loop_outcome_started",
)
LOOPS = tuple(f"loop-{n:02d}" for n in range(12))
OUTCOMES = {"completed": 60, "nothing_detected": 20, "no_action": 10, "failed": 5, "skipped": 5}

# Each variant of `loopengine history [LOOP_ID] [--outcome O]` and the index it must read.
# With loop and outcome, (outcome, started_at) alone would read every row of a common outcome
# to find a rare loop's few: the plan must use the three-column index.
VARIANTS = {
    "newest": ({}, "ix_executions_started"),
    "loop": ({"loop_id": "loop-03"}, "ix_executions_loop_started"),
    "outcome": ({"outcome": "failed"}, "ix_executions_outcome_started"),
    "loop_and_outcome": (
        {"loop_id": "loop-11", "outcome": "completed"},
        "ix_executions_loop_outcome_started",
    ),
    "next_page": (
        {"started_by": 1_700_500_000.0, "excluding": ["a" * 32]},
        "ix_executions_started",
    ),
}


def _rows(count: int) -> list[dict[str, Any]]:
    rng = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(len(LOOPS))]
    return [
        {
            "id": f"{n:032x}",
            "loop_id": rng.choices(LOOPS, weights)[0],
            "loop_version": "1",
            "loop_file": "loop.yaml",
            "status": "finished",
            "outcome": rng.choices(list(OUTCOMES), list(OUTCOMES.values()))[0],
            "job_id": f"{n:032x}",
            "trigger_type": "cron",
            "durability": "execution",
            "dry_run": False,
            "started_at": 1_700_000_000 + rng.uniform(0, 90 * 86_400),
            "context": {},
            "usage": {},
        }
        for n in range(count)
    ]


@pytest.fixture(scope="module")
def connection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path_factory.mktemp('history') / 'store.db'}")
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
            opened.execute(tables.executions.insert(), _rows(3_000))
        yield opened
    engine.dispose()


def _history_sql(connection: sa.Connection, **filters: Any) -> str:
    """The SELECT ``list_executions`` runs, its parameters inlined by SQLite's trace."""
    statements: list[str] = []
    driver = connection.connection.driver_connection
    driver.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        list_executions(connection, **filters)
    finally:
        driver.set_trace_callback(None)  # type: ignore[union-attr]
    [select] = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    return select


def _plan(connection: sa.Connection, **filters: Any) -> list[str]:
    with connection.begin():
        sql = _history_sql(connection, **filters)
        return [row[3] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]


def _index_read(plan: list[str]) -> str | None:
    """The index the plan reads executions through; None for a table scan."""
    for line in plan:
        found = re.match(r"(?:SCAN|SEARCH) executions USING (?:COVERING )?INDEX (\w+)", line)
        if found:
            return found.group(1)
    return None


@pytest.mark.parametrize(("filters", "index"), VARIANTS.values(), ids=VARIANTS)
def test_history_reads_through_its_index(
    connection: sa.Connection, filters: dict[str, Any], index: str
) -> None:
    assert _index_read(_plan(connection, **filters)) == index


@pytest.mark.parametrize(("filters", "index"), VARIANTS.values(), ids=VARIANTS)
def test_history_needs_no_sort(
    connection: sa.Connection, filters: dict[str, Any], index: str
) -> None:
    plan = _plan(connection, **filters)
    assert not [line for line in plan if "TEMP B-TREE" in line], plan


def test_a_version_3_database_gains_the_history_indexes(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as connection:
        with connection.begin():
            migrated_to(connection, 3)
            for name in HISTORY_INDEXES:  # version 1 now creates them; a real v3 lacks them
                connection.exec_driver_sql(f"DROP INDEX {name}")
        with connection.begin():
            migrate(connection)
        names = {index["name"] for index in sa.inspect(connection).get_indexes("executions")}
    engine.dispose()
    assert names >= set(HISTORY_INDEXES)
