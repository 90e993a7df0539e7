"""The chat's versioned instructions per category (seed 003, pillar 3): the autoreview loop adds
a version, watches it, and rolls it back; the chat reads the active one at each message.

Version 0 of every category is "no instructions" and has no row. A version's ``state`` is
``watched`` (active, judged each cycle), ``confirmed`` (active), ``retired`` (replaced) or
``rolled_back``; at most one version of a category is active.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store._tables import chat_prompts

__all__ = ["ACTIVE", "active", "add_version", "judged", "roll_back", "versions"]

ACTIVE = ("watched", "confirmed")


def active(connection: sa.Connection, category: str | None = None) -> dict[str, dict[str, Any]]:
    """The active version of each category (of ``category`` only, when given)."""
    query = sa.select(chat_prompts).where(chat_prompts.c.state.in_(ACTIVE))
    if category is not None:
        query = query.where(chat_prompts.c.category == category)
    return {row["category"]: dict(row) for row in connection.execute(query).mappings()}


def versions(connection: sa.Connection, category: str | None = None) -> list[dict[str, Any]]:
    """Every version kept, newest first (of ``category`` only, when given)."""
    query = sa.select(chat_prompts).order_by(
        chat_prompts.c.created_at.desc(), chat_prompts.c.version.desc()
    )
    if category is not None:
        query = query.where(chat_prompts.c.category == category)
    return [dict(row) for row in connection.execute(query).mappings()]


def _active_version(connection: sa.Connection, category: str) -> int:
    found = active(connection, category).get(category)
    return int(found["version"]) if found is not None else 0


def add_version(
    connection: sa.Connection,
    category: str,
    text: str,
    *,
    parent: int,
    baseline: float | None,
    reason: str,
    execution_id: str | None,
    now: float,
) -> int | None:
    """Make ``text`` the category's active version, watched, replacing ``parent``; None (and
    nothing written) when ``parent`` is no longer the active version (another cycle won)."""
    if _active_version(connection, category) != parent:
        return None
    newest = sa.select(sa.func.max(chat_prompts.c.version)).where(
        chat_prompts.c.category == category
    )
    version = int(connection.execute(newest).scalar() or 0) + 1
    connection.execute(
        chat_prompts.update()
        .where(chat_prompts.c.category == category, chat_prompts.c.state.in_(ACTIVE))
        .values(state="retired")
    )
    connection.execute(
        chat_prompts.insert().values(
            category=category,
            version=version,
            text=text,
            state="watched",
            parent=parent,
            baseline=baseline,
            watched=0,
            reason=reason,
            execution_id=execution_id,
            created_at=now,
        )
    )
    return version


def judged(connection: sa.Connection, category: str, version: int, *, confirm: bool) -> None:
    """Count one more cycle that judged the watched ``version``; ``confirm`` ends its watch."""
    values: dict[str, Any] = {"watched": chat_prompts.c.watched + 1}
    if confirm:
        values["state"] = "confirmed"
    connection.execute(
        chat_prompts.update()
        .where(
            chat_prompts.c.category == category,
            chat_prompts.c.version == version,
            chat_prompts.c.state == "watched",
        )
        .values(**values)
    )


def roll_back(connection: sa.Connection, category: str, version: int) -> int | None:
    """Replace the active ``version`` by the one it replaced (0: no instructions); that
    version, or None (and nothing written) when ``version`` is no longer active."""
    rows = connection.execute(
        sa.select(chat_prompts.c.parent).where(
            chat_prompts.c.category == category,
            chat_prompts.c.version == version,
            chat_prompts.c.state.in_(ACTIVE),
        )
    ).all()
    if not rows:
        return None
    parent = int(rows[0].parent)
    connection.execute(
        chat_prompts.update()
        .where(chat_prompts.c.category == category, chat_prompts.c.version == version)
        .values(state="rolled_back")
    )
    connection.execute(
        chat_prompts.update()
        .where(chat_prompts.c.category == category, chat_prompts.c.version == parent)
        .values(state="confirmed")
    )
    return parent
