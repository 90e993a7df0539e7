"""Executions listed page by page: every execution once, in order, ties at one instant
included; a cursor that is not one is refused."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.errors import ContractError
from loopengine.store import _tables as tables
from loopengine.store import create_engine, executions, migrate

STARTS = [1_700_000_000.0 + n // 3 for n in range(20)]
"""Twenty executions, three at each instant (two at the last)."""


def _row(n: int, started_at: float, loop_id: str) -> dict[str, Any]:
    return {
        "id": f"{n:032x}",
        "loop_id": loop_id,
        "loop_version": "1",
        "loop_file": "loop.yaml",
        "status": "finished",
        "outcome": "completed",
        "job_id": f"{n:032x}",
        "trigger_type": "cron",
        "durability": "execution",
        "dry_run": False,
        "started_at": started_at,
        "context": {},
        "usage": {},
    }


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    rows = [_row(n, start, "tied" if n % 2 else "other") for n, start in enumerate(STARTS)]
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
            opened.execute(tables.executions.insert(), rows)
        yield opened
    engine.dispose()


def _all_pages(connection: sa.Connection, limit: int, **filters: Any) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = executions.page_of_executions(connection, limit=limit, cursor=cursor, **filters)
        pages.append([row.id for row in page.rows])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 7, 20, 50])
def test_pages_list_every_execution_once_newest_first(
    connection: sa.Connection, limit: int
) -> None:
    everything = [row.id for row in executions.list_executions(connection, limit=100)]
    listed = [execution for page in _all_pages(connection, limit) for execution in page]
    assert listed == everything


def test_pages_keep_the_filters(connection: sa.Connection) -> None:
    pages = _all_pages(connection, 2, loop_id="tied")
    listed = [execution for page in pages for execution in page]
    assert listed == [r.id for r in executions.list_executions(connection, loop_id="tied")]


def test_the_last_page_has_no_cursor(connection: sa.Connection) -> None:
    page = executions.page_of_executions(connection, limit=len(STARTS) + 1)
    assert len(page.rows) == len(STARTS)
    assert page.next_cursor is None


DEEP = base64.urlsafe_b64encode(b"[" * 3000).decode()
"""A cursor nested deeper than the JSON parser recurses."""


@pytest.mark.parametrize("cursor", ["x", "e30", "eyJzIjoxfQ", "W10", "!" * 10, "a" * 5000, DEEP])
def test_a_cursor_that_is_not_one_is_refused(connection: sa.Connection, cursor: str) -> None:
    with pytest.raises(ContractError, match="not a cursor"):
        executions.page_of_executions(connection, cursor=cursor)


@pytest.fixture
def varied(connection: sa.Connection) -> sa.Connection:
    """Besides the twenty: one running execution and one waiting webhook's, later."""
    extra = [
        {**_row(100, STARTS[-1] + 10, "tied"), "status": "running", "outcome": None},
        {**_row(101, STARTS[-1] + 20, "tied"), "status": "waiting", "trigger_type": "webhook"},
    ]
    with connection.begin():
        connection.execute(tables.executions.insert(), extra)
    return connection


def _narrowed(connection: sa.Connection, **wanted: Any) -> list[str]:
    narrowed = executions.Narrowed(**wanted)
    pages = _all_pages(connection, 4, narrowed=narrowed)
    return [execution_id for page in pages for execution_id in page]


def test_a_listing_narrowed_to_a_status(varied: sa.Connection) -> None:
    assert _narrowed(varied, status="running") == [f"{100:032x}"]


def test_a_listing_narrowed_to_a_trigger_type(varied: sa.Connection) -> None:
    assert _narrowed(varied, trigger_type="webhook") == [f"{101:032x}"]


def test_a_listing_narrowed_to_a_span_of_start_times(varied: sa.Connection) -> None:
    since, until = STARTS[3], STARTS[9]
    expected = [f"{n:032x}" for n in reversed(range(20)) if since <= STARTS[n] < until]
    assert _narrowed(varied, since=since, until=until) == expected
