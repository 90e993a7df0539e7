"""An execution's log: the lines its skills logged, written in the commits of its phases and read
in order, a page at a time, after a cursor (what a live view last showed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine._json import JSON, JSONObject
from loopengine.store._record import Record, iso
from loopengine.store._tables import execution_logs, executions

__all__ = ["LogLine", "LogPage", "inserting_lines", "lines_of"]

_INSERT = execution_logs.insert()


@dataclass(frozen=True, slots=True)
class LogLine(Record):
    """One line: when, its level's name (``INFO``, ``WARNING``…), the phase and step of the skill
    call that logged it, and what it said."""

    at: float
    level: str
    phase: str
    step: str
    message: str

    def view(self) -> JSONObject:
        """The line as ``logs --json`` and the API show it (``at`` in ISO 8601 UTC)."""
        return {**self.row(), "at": iso(self.at)}


@dataclass(frozen=True, slots=True)
class LogPage:
    """Lines in order; ``after`` is the cursor to ask for the lines that follow them (the one
    given when there are none yet); ``status`` is the execution's now (``running``,
    ``waiting``…: whether more may come), None when there is no such execution."""

    lines: tuple[LogLine, ...]
    after: int
    status: str | None

    def view(self, execution_id: str) -> JSONObject:
        """The page as ``logs --json`` and ``GET /executions/{id}/logs`` show it."""
        lines: list[JSON] = [line.view() for line in self.lines]
        return {
            "execution_id": execution_id,
            "status": self.status,
            "lines": lines,
            "after": self.after,
        }


def inserting_lines(execution_id: str, lines: Sequence[LogLine]) -> list[fastpath.Bound]:
    """The statements recording ``lines`` of ``execution_id``, one a line."""
    return [(_INSERT, {"execution_id": execution_id, **line.row()}) for line in lines]


def lines_of(connection: sa.Connection, execution_id: str, after: int, limit: int) -> LogPage:
    """The first ``limit`` lines of ``execution_id`` after the cursor ``after`` (0: from the
    first), and its status, read together."""
    status = connection.execute(
        sa.select(executions.c.status).where(executions.c.id == execution_id)
    ).scalar()
    query = (
        sa.select(execution_logs)
        .where(execution_logs.c.execution_id == execution_id, execution_logs.c.id > after)
        .order_by(execution_logs.c.id)
        .limit(limit)
    )
    rows = connection.execute(query).mappings().all()
    lines = tuple(LogLine.from_row(row) for row in rows)
    return LogPage(lines, int(rows[-1]["id"]) if rows else after, status)
