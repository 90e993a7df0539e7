"""What the autolearn loops keep (seed 003): each chat response as a scoring sample, the routing
order per category the chat follows over the config's, and the history of every change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from loopengine.store._tables import autolearn_history, chat_scores, routing_orders, score_history

__all__ = [
    "HISTORY_KEPT",
    "MAX_TEXT",
    "SCORES_KEPT",
    "add_history",
    "claim_ungraded",
    "count_ungraded",
    "exploration_counts",
    "grade",
    "history",
    "insert_samples",
    "last_scores",
    "prune_samples",
    "put_routing",
    "record_scores",
    "release",
    "routing",
    "samples_in_window",
]

MAX_TEXT = 4000
"""Characters of a message and its reply kept for grading and replays."""
SCORES_KEPT = 288
"""Cycles of scores kept per node and category (a day of 5-minute cycles)."""
HISTORY_KEPT = 200
"""Newest history entries kept; older ones are dropped as new ones come (seed 003's rotation)."""


def insert_samples(connection: sa.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Record responses to score (texts cut to ``MAX_TEXT``)."""
    if rows:
        cut = [
            {**row, "message": row["message"][:MAX_TEXT], "reply": row["reply"][:MAX_TEXT]}
            for row in rows
        ]
        connection.execute(chat_scores.insert(), cut)


def exploration_counts(
    connection: sa.Connection, category: str, nodes: Sequence[str], cap: int
) -> tuple[dict[str, int], int]:
    """Each node's responses in ``category``, counted up to ``cap`` (what exploration needs to
    know: whether a node has enough), and the newest response id of these nodes in the
    category; each read through the index, however many responses there are."""
    counts, last = {}, 0
    for node in nodes:
        newest = (
            sa.select(chat_scores.c.id)
            .where(chat_scores.c.category == category, chat_scores.c.node == node)
            .limit(cap)
            .subquery()
        )
        counts[node] = int(
            connection.execute(sa.select(sa.func.count()).select_from(newest)).scalar() or 0
        )
        newest_id = sa.select(sa.func.max(chat_scores.c.id)).where(
            chat_scores.c.category == category, chat_scores.c.node == node
        )
        last = max(last, int(connection.execute(newest_id).scalar() or 0))
    return counts, last


def samples_in_window(connection: sa.Connection, window: int) -> list[dict[str, Any]]:
    """The newest ``window`` samples of each node × category, oldest first."""
    ranked = _ranked(chat_scores)
    query = sa.select(ranked).where(ranked.c.newest <= window).order_by(ranked.c.id)
    return [dict(row) for row in connection.execute(query).mappings()]


def _ranked(table: sa.Table, *columns: Any) -> sa.Subquery:
    """``columns`` of ``table`` (all when none) with ``newest``: each row's rank, newest first,
    within its node × category."""
    newest = (
        sa.func.row_number()
        .over(partition_by=(table.c.category, table.c.node), order_by=table.c.id.desc())
        .label("newest")
    )
    return sa.select(*(columns or (table,)), newest).subquery()


def _prune(connection: sa.Connection, table: sa.Table, keep: int) -> int:
    """Drop each node × category's rows of ``table`` older than its newest ``keep``."""
    ranked = _ranked(table, table.c.id)
    old = sa.select(ranked.c.id).where(ranked.c.newest > keep)
    return int(connection.execute(table.delete().where(table.c.id.in_(old))).rowcount)


def prune_samples(connection: sa.Connection, keep: int) -> int:
    """Drop each node × category's samples older than its newest ``keep`` (so the table, and
    every read of the window, stays bounded however long the chat runs); how many went."""
    return _prune(connection, chat_scores, keep)


def record_scores(
    connection: sa.Connection,
    categories: Mapping[str, Sequence[Mapping[str, Any]]],
    execution_id: str | None,
    now: float,
) -> None:
    """Append a cycle's scores (``NodeScore.as_dict`` rows per category), keeping each node ×
    category's newest ``SCORES_KEPT``."""
    fields = ("node", "score", "speed", "quality", "reliability", "samples")
    rows = [
        {"category": category, **{f: node[f] for f in fields}, "execution_id": execution_id,
         "created_at": now}
        for category, nodes in categories.items()
        for node in nodes
    ]  # fmt: skip
    if rows:
        connection.execute(score_history.insert(), rows)
        _prune(connection, score_history, SCORES_KEPT)


def last_scores(connection: sa.Connection) -> dict[tuple[str, str], float]:
    """Each node × category's score at the last cycle that recorded one."""
    newest = (
        sa.select(sa.func.max(score_history.c.id))
        .group_by(score_history.c.category, score_history.c.node)
        .scalar_subquery()
    )
    query = sa.select(score_history).where(score_history.c.id.in_(newest))
    return {(r.category, r.node): float(r.score) for r in connection.execute(query)}


def routing(connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The routing order of each tuned category, with its version and why it changed."""
    rows = connection.execute(sa.select(routing_orders)).mappings()
    return {row["category"]: dict(row) for row in rows}


def put_routing(
    connection: sa.Connection,
    category: str,
    nodes: list[str],
    reason: str,
    execution_id: str | None,
    now: float,
) -> int:
    """Replace a category's order (one row, so the chat reads an order whole); its version."""
    current = connection.execute(
        sa.select(routing_orders.c.version).where(routing_orders.c.category == category)
    ).scalar()
    version = int(current or 0) + 1
    row = {
        "nodes": nodes,
        "reason": reason,
        "execution_id": execution_id,
        "updated_at": now,
        "version": version,
    }
    if current is None:
        connection.execute(routing_orders.insert().values(category=category, **row))
    else:
        connection.execute(
            routing_orders.update().where(routing_orders.c.category == category).values(**row)
        )
    return version


def add_history(
    connection: sa.Connection,
    kind: str,
    category: str | None,
    detail: Mapping[str, Any],
    execution_id: str | None,
    now: float,
) -> None:
    """Append a change (``routing``, ``prompt``, ``rollback``…), keeping the newest
    ``HISTORY_KEPT``."""
    inserted = connection.execute(
        autolearn_history.insert().values(
            kind=kind,
            category=category,
            detail=dict(detail),
            execution_id=execution_id,
            created_at=now,
        )
    ).inserted_primary_key
    oldest_kept = int(inserted[0]) - HISTORY_KEPT if inserted else 0
    if oldest_kept > 0:
        connection.execute(autolearn_history.delete().where(autolearn_history.c.id <= oldest_kept))


def history(connection: sa.Connection, limit: int = HISTORY_KEPT) -> list[dict[str, Any]]:
    """The newest changes first."""
    query = sa.select(autolearn_history).order_by(autolearn_history.c.id.desc()).limit(limit)
    return [dict(row) for row in connection.execute(query).mappings()]


def claim_ungraded(
    connection: sa.Connection, limit: int, now: float, until: float
) -> list[dict[str, Any]]:
    """Take the newest answered responses never sent to the grader, at most ``limit``, claimed
    until ``until`` so that another cycle does not grade them too. A claim past its ``until``
    (its process died while grading) is given back first; failed responses are never graded."""
    connection.execute(
        chat_scores.update()
        .where(chat_scores.c.claimed_until < now)
        .values(graded_at=None, claimed_until=None)
    )
    newest = (
        sa.select(chat_scores)
        .where(chat_scores.c.graded_at.is_(None), chat_scores.c.success.is_(True))
        .order_by(chat_scores.c.id.desc())
        .limit(limit)
    )
    if connection.dialect.name == "postgresql":  # SQLite's writes are one at a time already
        newest = newest.with_for_update(skip_locked=True)
    rows = [dict(row) for row in connection.execute(newest).mappings()]
    if rows:
        ids = [row["id"] for row in rows]
        connection.execute(
            chat_scores.update()
            .where(chat_scores.c.id.in_(ids))
            .values(graded_at=now, claimed_until=until)
        )
    return rows


def count_ungraded(connection: sa.Connection, limit: int) -> int:
    """How many answered responses wait for the grader, counted up to ``limit``."""
    waiting = (
        sa.select(chat_scores.c.id)
        .where(chat_scores.c.graded_at.is_(None), chat_scores.c.success.is_(True))
        .limit(limit)
        .subquery()
    )
    return int(connection.execute(sa.select(sa.func.count()).select_from(waiting)).scalar() or 0)


def release(connection: sa.Connection, sample_ids: Sequence[int], until: float) -> None:
    """Give back responses claimed until ``until`` and not graded, for a later cycle (one another
    cycle claimed since, once this claim lapsed, stays its)."""
    if sample_ids:
        connection.execute(
            chat_scores.update()
            .where(
                chat_scores.c.id.in_(list(sample_ids)),
                chat_scores.c.quality.is_(None),
                chat_scores.c.claimed_until == until,
            )
            .values(graded_at=None, claimed_until=None)
        )


def grade(connection: sa.Connection, sample_id: int, quality: float | None) -> None:
    """Record a claimed response's grade (None: the grader gave none; it is not sent again)."""
    connection.execute(
        chat_scores.update()
        .where(chat_scores.c.id == sample_id)
        .values(quality=quality, claimed_until=None)
    )
