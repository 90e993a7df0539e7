"""What the chat remembers of each user (seed 003, pillar 1): their newest exchanges, rotated,
and the profile and deep summary the memory loop derives from them."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store._dialect import dialect_insert
from loopengine.store._tables import memory_exchanges, memory_profiles

__all__ = [
    "EXCHANGE_TEXT",
    "add_exchange",
    "counts",
    "due_summaries",
    "exchanges",
    "most_pending",
    "profile",
    "profiles",
    "put_profile",
    "put_summary",
    "stale_profiles",
]

EXCHANGE_TEXT = 2000
"""Characters of a message and of its reply kept per exchange (so a user's memory is bounded:
``memory_keep`` × 2 × this)."""


def add_exchange(
    connection: sa.Connection,
    user_id: str,
    exchange: dict[str, Any],
    keep: int,
    now: float,
) -> None:
    """Remember one exchange (``session_id``, ``category``, ``message``, ``reply``) of
    ``user_id``, dropping the user's exchanges older than the newest ``keep``."""
    row = {
        **exchange,
        "message": exchange["message"][:EXCHANGE_TEXT],
        "reply": exchange["reply"][:EXCHANGE_TEXT],
    }
    connection.execute(memory_exchanges.insert().values(user_id=user_id, created_at=now, **row))
    counted = dialect_insert(connection, memory_profiles).values(
        user_id=user_id, exchanges=1, updated_at=now
    )
    connection.execute(
        counted.on_conflict_do_update(
            index_elements=["user_id"],
            set_={"exchanges": memory_profiles.c.exchanges + 1, "updated_at": now},
        )
    )
    oldest_kept = (
        sa.select(memory_exchanges.c.id)
        .where(memory_exchanges.c.user_id == user_id)
        .order_by(memory_exchanges.c.id.desc())
        .offset(keep - 1)
        .limit(1)
        .scalar_subquery()
    )
    connection.execute(
        memory_exchanges.delete().where(
            memory_exchanges.c.user_id == user_id, memory_exchanges.c.id < oldest_kept
        )
    )


def exchanges(connection: sa.Connection, user_id: str, limit: int) -> list[dict[str, Any]]:
    """The user's newest ``limit`` exchanges, oldest first."""
    newest = (
        sa.select(memory_exchanges)
        .where(memory_exchanges.c.user_id == user_id)
        .order_by(memory_exchanges.c.id.desc())
        .limit(limit)
    )
    return [dict(row) for row in reversed(connection.execute(newest).mappings().all())]


def profile(connection: sa.Connection, user_id: str) -> dict[str, Any] | None:
    """The user's memory row: exchange count, profile, summary and when each was made."""
    query = sa.select(memory_profiles).where(memory_profiles.c.user_id == user_id)
    found = connection.execute(query).mappings().first()
    return dict(found) if found is not None else None


def profiles(connection: sa.Connection, limit: int = 100) -> list[dict[str, Any]]:
    """The memory rows changed most recently (an exchange, a profile, a summary), newest
    first."""
    query = sa.select(memory_profiles).order_by(memory_profiles.c.updated_at.desc()).limit(limit)
    return [dict(row) for row in connection.execute(query).mappings()]


def counts(connection: sa.Connection) -> tuple[int, int]:
    """How many users the chat remembers, and how many of them have a deep summary."""
    query = sa.select(sa.func.count(), sa.func.count(memory_profiles.c.summary))
    users, summarized = connection.execute(query).one()
    return int(users), int(summarized)


def stale_profiles(connection: sa.Connection, limit: int) -> list[dict[str, Any]]:
    """Users with exchanges their profile has not read yet, those waiting longest first."""
    query = (
        sa.select(memory_profiles)
        .where(memory_profiles.c.exchanges > memory_profiles.c.profiled_at)
        .order_by(memory_profiles.c.updated_at)
        .limit(limit)
    )
    return [dict(row) for row in connection.execute(query).mappings()]


def due_summaries(connection: sa.Connection, every: int, limit: int) -> list[dict[str, Any]]:
    """Users with ``every`` exchanges or more since their last deep summary, most first."""
    pending = memory_profiles.c.exchanges - memory_profiles.c.summarized_at
    query = (
        sa.select(memory_profiles)
        .where(pending >= every)
        .order_by(pending.desc(), memory_profiles.c.user_id)
        .limit(limit)
    )
    return [dict(row) for row in connection.execute(query).mappings()]


def most_pending(connection: sa.Connection) -> int:
    """The most exchanges any user has made since their last deep summary (0 with no user)."""
    pending = memory_profiles.c.exchanges - memory_profiles.c.summarized_at
    return int(connection.execute(sa.select(sa.func.max(pending))).scalar() or 0)


def put_profile(
    connection: sa.Connection, user_id: str, detected: dict[str, Any], at: int, now: float
) -> None:
    """Store the profile detected from the user's exchanges up to their ``at``-th."""
    connection.execute(
        memory_profiles.update()
        .where(memory_profiles.c.user_id == user_id)
        .values(profile=detected, profiled_at=at, updated_at=now)
    )


def put_summary(
    connection: sa.Connection, user_id: str, summary: str, node: str, at: int, now: float
) -> None:
    """Store the deep summary ``node`` wrote of the user's exchanges up to their ``at``-th."""
    connection.execute(
        memory_profiles.update()
        .where(memory_profiles.c.user_id == user_id)
        .values(summary=summary, summary_node=node, summarized_at=at, updated_at=now)
    )
