"""Per-loop learned state, the human-review queue and the analysis context cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store._record import Record
from loopengine.store._tables import context_cache, loop_state, reviews

__all__ = [
    "LearnedState",
    "cached_context",
    "get_state",
    "put_context",
    "put_state",
    "queue_review",
]

_GET_STATE = sa.select(
    loop_state.c["values"], loop_state.c.samples, loop_state.c.last_adjusted_at
).where(loop_state.c.loop_id == sa.bindparam("loop_id"))
_UPDATE_STATE = loop_state.update().where(loop_state.c.loop_id == sa.bindparam("_loop_id"))
_INSERT_STATE = loop_state.insert()


@dataclass(frozen=True, slots=True)
class LearnedState(Record):
    """What a loop's learn phase keeps between executions: its values and how many samples and
    when it last moved them (for the gate of the next move)."""

    values: dict[str, Any]
    samples: int
    last_adjusted_at: float | None


def get_state(connection: sa.Connection, loop_id: str) -> LearnedState | None:
    row = fastpath.fetch_one(connection, _GET_STATE, {"loop_id": loop_id})
    return None if row is None else LearnedState.from_row(row)


def put_state(
    connection: sa.Connection,
    loop_id: str,
    values: dict[str, Any],
    samples: int,
    last_adjusted_at: float | None,
    at: float,
) -> None:
    row = {
        "values": values,
        "samples": samples,
        "last_adjusted_at": last_adjusted_at,
        "updated_at": at,
    }
    if fastpath.execute(connection, _UPDATE_STATE, {"_loop_id": loop_id, **row}) == 0:
        fastpath.execute(connection, _INSERT_STATE, {"loop_id": loop_id, **row})


def queue_review(
    connection: sa.Connection, execution_id: str, loop_id: str, reason: str, at: float
) -> None:
    connection.execute(
        reviews.insert().values(
            execution_id=execution_id,
            loop_id=loop_id,
            reason=reason,
            status="pending",
            created_at=at,
        )
    )


def cached_context(connection: sa.Connection, key: str, now: float) -> Any:
    query = sa.select(context_cache.c.value).where(
        context_cache.c.key == key, context_cache.c.expires_at > now
    )
    return connection.execute(query).scalar()


def put_context(connection: sa.Connection, key: str, value: Any, expires_at: float) -> None:
    connection.execute(context_cache.delete().where(context_cache.c.key == key))
    connection.execute(context_cache.insert().values(key=key, value=value, expires_at=expires_at))
