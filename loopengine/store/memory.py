"""What the chat remembers of each user (seed 003, pillar 1): their newest exchanges, rotated,
and the profile and deep summary the memory loop derives from them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from loopengine._json import JSONObject
from loopengine.store._dialect import dialect_insert
from loopengine.store._record import Record
from loopengine.store._tables import memory_exchanges, memory_profiles

__all__ = [
    "EXCHANGE_TEXT",
    "MemoryExchange",
    "UserMemory",
    "add_exchange",
    "counts",
    "due_summaries",
    "exchanges",
    "most_pending",
    "profile",
    "profiles",
    "put_profile",
    "put_summary",
    "remembered",
    "stale_profiles",
    "summaries_due",
]

EXCHANGE_TEXT = 2000
"""Characters of a message and of its reply kept per exchange (so a user's memory is bounded:
``memory_keep`` × 2 × this)."""


@dataclass(frozen=True, slots=True)
class MemoryExchange(Record):
    """One exchange of a user kept for their memory (texts cut to ``EXCHANGE_TEXT``)."""

    id: int
    user_id: str
    session_id: str | None
    category: str
    message: str
    reply: str
    created_at: float


@dataclass(frozen=True, slots=True)
class UserMemory(Record):
    """What the chat remembers of a user: exchanges made, the profile detected up to the
    ``profiled_at``-th, the deep summary ``summary_node`` wrote up to the ``summarized_at``-th."""

    user_id: str
    exchanges: int
    profile: JSONObject | None
    profiled_at: int
    summary: str | None
    summary_node: str | None
    summarized_at: int
    updated_at: float


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


def exchanges(connection: sa.Connection, user_id: str, limit: int) -> list[MemoryExchange]:
    """The user's newest ``limit`` exchanges, oldest first."""
    newest = (
        sa.select(memory_exchanges)
        .where(memory_exchanges.c.user_id == user_id)
        .order_by(memory_exchanges.c.id.desc())
        .limit(limit)
    )
    rows = reversed(connection.execute(newest).mappings().all())
    return [MemoryExchange.from_row(row) for row in rows]


def profile(connection: sa.Connection, user_id: str) -> UserMemory | None:
    """The user's memory row: exchange count, profile, summary and when each was made."""
    query = sa.select(memory_profiles).where(memory_profiles.c.user_id == user_id)
    found = connection.execute(query).mappings().first()
    return UserMemory.from_row(found) if found is not None else None


def profiles(connection: sa.Connection, limit: int = 100) -> list[UserMemory]:
    """The memory rows changed most recently (an exchange, a profile, a summary), newest
    first."""
    query = sa.select(memory_profiles).order_by(memory_profiles.c.updated_at.desc()).limit(limit)
    return [UserMemory.from_row(row) for row in connection.execute(query).mappings()]


def counts(connection: sa.Connection) -> tuple[int, int]:
    """How many users the chat remembers, and how many of them have a deep summary."""
    query = sa.select(sa.func.count(), sa.func.count(memory_profiles.c.summary))
    users, summarized = connection.execute(query).one()
    return int(users), int(summarized)


def stale_profiles(connection: sa.Connection, limit: int) -> list[UserMemory]:
    """Users with exchanges their profile has not read yet, those waiting longest first."""
    query = (
        sa.select(memory_profiles)
        .where(memory_profiles.c.exchanges > memory_profiles.c.profiled_at)
        .order_by(memory_profiles.c.updated_at)
        .limit(limit)
    )
    return [UserMemory.from_row(row) for row in connection.execute(query).mappings()]


def due_summaries(connection: sa.Connection, every: int, limit: int) -> list[UserMemory]:
    """Users with ``every`` exchanges or more since their last deep summary, most first."""
    pending = memory_profiles.c.exchanges - memory_profiles.c.summarized_at
    query = (
        sa.select(memory_profiles)
        .where(pending >= every)
        .order_by(pending.desc(), memory_profiles.c.user_id)
        .limit(limit)
    )
    return [UserMemory.from_row(row) for row in connection.execute(query).mappings()]


def most_pending(connection: sa.Connection) -> int:
    """The most exchanges any user has made since their last deep summary (0 with no user)."""
    pending = memory_profiles.c.exchanges - memory_profiles.c.summarized_at
    return int(connection.execute(sa.select(sa.func.max(pending))).scalar() or 0)


def put_profile(
    connection: sa.Connection, user_id: str, detected: JSONObject, at: int, now: float
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


def summaries_due(
    connection: sa.Connection, every: int, limit: int
) -> tuple[list[UserMemory], int]:
    """Read together: the users due for a deep summary (``due_summaries``) and the most
    exchanges any user made since their last one (``most_pending``)."""
    return due_summaries(connection, every, limit), most_pending(connection)


def remembered(connection: sa.Connection, user_id: str | None) -> list[UserMemory]:
    """What the chat remembers of ``user_id`` (none when it knows nothing of them), or of the
    users seen most recently."""
    if user_id is None:
        return profiles(connection)
    found = profile(connection, user_id)
    return [found] if found is not None else []
