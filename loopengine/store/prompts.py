"""The chat's versioned instructions per category (seed 003, pillar 3): the autoreview loop adds
a version, watches it, and rolls it back; the chat reads the active one at each message.

Version 0 of every category is "no instructions" and has no row. A version's ``state`` is
``watched`` (active, judged each cycle), ``confirmed`` (active), ``retired`` (replaced) or
``rolled_back``; at most one version of a category is active.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._record import Record
from loopengine.store._tables import chat_prompts

__all__ = [
    "ACTIVE",
    "PromptVersion",
    "active",
    "active_of",
    "add_version",
    "judged",
    "plain",
    "roll_back",
    "rolled_back_texts",
    "versions",
]

ACTIVE = ("watched", "confirmed")


@dataclass(frozen=True, slots=True)
class PromptVersion(Record):
    """A version of a category's instructions: its state, the version it replaced (``parent``),
    the mean grade before it (``baseline``), the cycles that judged it and through which sample
    (``watched``, ``judged_id``)."""

    category: str
    version: int
    text: str
    state: str
    parent: int
    baseline: float | None
    watched: int
    judged_id: int
    reason: str
    execution_id: str | None
    created_at: float


def active(connection: sa.Connection, category: str | None = None) -> dict[str, PromptVersion]:
    """The active version of each category (of ``category`` only, when given)."""
    query = sa.select(chat_prompts).where(chat_prompts.c.state.in_(ACTIVE))
    if category is not None:
        query = query.where(chat_prompts.c.category == category)
    rows = connection.execute(query).mappings()
    return {row["category"]: PromptVersion.from_row(row) for row in rows}


def rolled_back_texts(connection: sa.Connection, category: str) -> set[str]:
    """The instructions of ``category`` that were rolled back (not to be applied again), each
    in its ``plain`` form."""
    query = sa.select(chat_prompts.c.text).where(
        chat_prompts.c.category == category, chat_prompts.c.state == "rolled_back"
    )
    return {plain(row.text) for row in connection.execute(query)}


def plain(text: str) -> str:
    """``text`` compared loosely: case, spacing and punctuation aside."""
    return " ".join("".join(c if c.isalnum() else " " for c in text.casefold()).split())


def versions(connection: sa.Connection, category: str) -> list[PromptVersion]:
    """Every version of ``category`` kept, newest first."""
    query = (
        sa.select(chat_prompts)
        .where(chat_prompts.c.category == category)
        .order_by(chat_prompts.c.version.desc())
    )
    return [PromptVersion.from_row(row) for row in connection.execute(query).mappings()]


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
    nothing written) when ``parent`` is no longer the active version (another cycle, or another
    daemon, changed it first)."""
    newest = sa.select(sa.func.max(chat_prompts.c.version)).where(
        chat_prompts.c.category == category
    )
    try:
        with connection.begin_nested() as nested:
            if not _retire(connection, category, parent):
                nested.rollback()
                return None
            version = int(connection.execute(newest).scalar() or 0) + 1
            connection.execute(
                chat_prompts.insert().values(
                    category=category,
                    version=version,
                    text=text,
                    state="watched",
                    parent=parent,
                    baseline=baseline,
                    watched=0,
                    judged_id=0,
                    reason=reason,
                    execution_id=execution_id,
                    created_at=now,
                )
            )
    except sa.exc.IntegrityError as exc:
        if not _taken(exc):
            raise
        return None
    return version


def _taken(error: sa.exc.IntegrityError) -> bool:
    """Whether ``error`` is a unique key already taken (by a concurrent writer)."""
    state = getattr(error.orig, "sqlstate", None)
    return bool(state == "23505" or "UNIQUE constraint failed" in str(error.orig))


def _retire(connection: sa.Connection, category: str, parent: int) -> bool:
    """Retire ``parent``, the active version; False when it is not (version 0: when another
    version is)."""
    if parent == 0:
        return not active(connection, category)
    return _leave(connection, category, parent, "retired")


def _leave(connection: sa.Connection, category: str, version: int, state: str) -> bool:
    """Move the active ``version`` to ``state``; False (and nothing written) when it is not the
    active version."""
    moved = connection.execute(
        chat_prompts.update()
        .where(
            chat_prompts.c.category == category,
            chat_prompts.c.version == version,
            chat_prompts.c.state.in_(ACTIVE),
        )
        .values(state=state)
    )
    return bool(moved.rowcount)


def judged(
    connection: sa.Connection, category: str, version: int, through: int, *, confirm: bool
) -> None:
    """Count one more cycle that judged the watched ``version`` on its samples up to id
    ``through``; ``confirm`` ends its watch."""
    values: dict[str, Any] = {"watched": chat_prompts.c.watched + 1, "judged_id": through}
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
    """Replace the active ``version`` by the newest version it descends from that was not
    rolled back itself (0: no instructions); that version, or None (and nothing written) when
    ``version`` is no longer active."""
    if not _leave(connection, category, version, "rolled_back"):
        return None
    lineage = {found.version: found for found in versions(connection, category)}
    restored = lineage[version].parent
    while restored and lineage[restored].state == "rolled_back":
        restored = lineage[restored].parent
    connection.execute(
        chat_prompts.update()
        .where(chat_prompts.c.category == category, chat_prompts.c.version == restored)
        .values(state="confirmed")
    )
    return restored


_ACTIVE_OF = sa.select(chat_prompts).where(
    chat_prompts.c.category == sa.bindparam("category"),
    sa.or_(*(chat_prompts.c.state == state for state in ACTIVE)),
)


def active_of(connection: sa.Connection, category: str) -> PromptVersion | None:
    """The active version of ``category``, if any: ``active`` of one category, read on the
    fast path as every chat message does."""
    row = fastpath.fetch_one(connection, _ACTIVE_OF, {"category": category})
    return None if row is None else PromptVersion.from_row(row)
