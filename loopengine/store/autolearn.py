"""What the autolearn loops keep (seed 003): each chat response as a scoring sample, the routing
order per category the chat follows over the config's, and the history of every change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine._json import JSONObject
from loopengine.errors import ThreadError
from loopengine.store import executions, health, memory, prompts, threads
from loopengine.store._record import ExecutionRow, Record, iso
from loopengine.store._tables import autolearn_history, chat_scores, routing_orders, score_history
from loopengine.store.memory import UserMemory
from loopengine.store.prompts import PromptVersion

__all__ = [
    "HISTORY_KEPT",
    "MAX_TEXT",
    "SCORES_KEPT",
    "ChatReading",
    "ChatSample",
    "ChatStart",
    "HistoryEntry",
    "Learned",
    "RecordReply",
    "Rollback",
    "RoutingOrder",
    "ScorePoint",
    "add_history",
    "apply_prompt",
    "chat_reading",
    "chat_start",
    "claim_ungraded",
    "count_ungraded",
    "exploration_counts",
    "grade",
    "history",
    "insert_samples",
    "last_scores",
    "learned",
    "prune_samples",
    "put_routing",
    "put_routings",
    "record_scores",
    "release",
    "review_window",
    "roll_back_prompts",
    "routing",
    "samples_in_window",
    "score_points",
    "scoring_window",
]

MAX_TEXT = 4000
"""Characters of a message and its reply kept for grading and replays."""
SCORES_KEPT = 288
"""Cycles of scores kept per node and category (a day of 5-minute cycles)."""
HISTORY_KEPT = 200
"""Newest history entries kept; older ones are dropped as new ones come (seed 003's rotation)."""


@dataclass(frozen=True, slots=True)
class ChatSample(Record):
    """One chat response kept for scoring: which node answered, how fast, whether it worked,
    under which instructions (``prompt_version``), and the grader's 1–10 once graded."""

    id: int
    execution_id: str
    session_id: str | None
    node: str
    category: str
    mode: str
    seconds: float
    output_tokens: int
    success: bool
    message: str
    reply: str
    quality: float | None
    graded_at: float | None
    created_at: float
    prompt_version: int
    claimed_until: float | None


@dataclass(frozen=True, slots=True)
class RoutingOrder(Record):
    """A category's tuned routing order, its version and why it changed."""

    category: str
    nodes: list[str]
    version: int
    reason: str
    execution_id: str | None
    updated_at: float


@dataclass(frozen=True, slots=True)
class HistoryEntry(Record):
    """One change an autolearn loop made (``routing``, ``prompt``, ``rollback``…)."""

    id: int
    kind: str
    category: str | None
    detail: JSONObject
    execution_id: str | None
    created_at: float

    def as_json(self) -> JSONObject:
        """The entry as ``GET /autolearn/history`` and ``autolearn history --json`` show it."""
        return {**asdict(self), "created_at": iso(self.created_at)}


_OF_NODE = (chat_scores.c.category == sa.bindparam("category")) & (
    chat_scores.c.node == sa.bindparam("node")
)
_EXPLORED = sa.select(
    sa.select(sa.func.count())
    .select_from(sa.select(chat_scores.c.id).where(_OF_NODE).limit(sa.bindparam("cap")).subquery())
    .scalar_subquery()
    .label("count"),
    sa.select(sa.func.max(chat_scores.c.id)).where(_OF_NODE).scalar_subquery().label("newest"),
)
"""A node's responses in a category, up to ``cap``, and its newest one (``exploration_counts``)."""
_ROUTING = sa.select(routing_orders)


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
) -> dict[str, tuple[int, int]]:
    """Each node's responses in ``category``, counted up to ``cap`` (what exploration needs to
    know: whether a node has enough), and its newest response id in the category; each read
    through the index, however many responses there are."""
    found = {}
    for node in nodes:
        params = {"category": category, "node": node, "cap": cap}
        row = fastpath.fetch_one(connection, _EXPLORED, params) or {}
        found[node] = int(row.get("count") or 0), int(row.get("newest") or 0)
    return found


def samples_in_window(connection: sa.Connection, window: int) -> list[ChatSample]:
    """The newest ``window`` samples of each node × category, oldest first."""
    ranked = _ranked(chat_scores)
    query = sa.select(ranked).where(ranked.c.newest <= window).order_by(ranked.c.id)
    return [ChatSample.from_row(row) for row in connection.execute(query).mappings()]


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


@dataclass(frozen=True, slots=True)
class ScorePoint(Record):
    """A node's score in a category at one autotune cycle."""

    category: str
    node: str
    score: float
    created_at: float


def score_points(connection: sa.Connection) -> list[ScorePoint]:
    """Every score kept (``SCORES_KEPT`` per node × category), oldest first."""
    columns = (score_history.c[name] for name in ("category", "node", "score", "created_at"))
    query = sa.select(*columns).order_by(score_history.c.id)
    return [ScorePoint.from_row(row) for row in connection.execute(query).mappings()]


def last_scores(connection: sa.Connection) -> dict[tuple[str, str], float]:
    """Each node × category's score at the last cycle that recorded one."""
    newest = (
        sa.select(sa.func.max(score_history.c.id))
        .group_by(score_history.c.category, score_history.c.node)
        .scalar_subquery()
    )
    query = sa.select(score_history).where(score_history.c.id.in_(newest))
    return {(r.category, r.node): float(r.score) for r in connection.execute(query)}


def routing(connection: sa.Connection) -> dict[str, RoutingOrder]:
    """The routing order of each tuned category, with its version and why it changed."""
    rows = fastpath.fetch_all(connection, _ROUTING, {})
    return {row["category"]: RoutingOrder.from_row(row) for row in rows}


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


def history(connection: sa.Connection, limit: int = HISTORY_KEPT) -> list[HistoryEntry]:
    """The newest changes first."""
    query = sa.select(autolearn_history).order_by(autolearn_history.c.id.desc()).limit(limit)
    return [HistoryEntry.from_row(row) for row in connection.execute(query).mappings()]


def claim_ungraded(
    connection: sa.Connection, limit: int, now: float, until: float
) -> list[ChatSample]:
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
    rows = [ChatSample.from_row(row) for row in connection.execute(newest).mappings()]
    if rows:
        ids = [row.id for row in rows]
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


def scoring_window(
    connection: sa.Connection, window: int
) -> tuple[list[ChatSample], dict[tuple[str, str], float]]:
    """Read together: the samples a tuning cycle scores (``samples_in_window``) and the scores of
    the last cycle (``last_scores``), its trends' start."""
    return samples_in_window(connection, window), last_scores(connection)


def review_window(
    connection: sa.Connection, window: int
) -> tuple[dict[str, PromptVersion], list[ChatSample]]:
    """Read together: each category's active instructions and the samples they are judged on."""
    return prompts.active(connection), samples_in_window(connection, window)


def put_routings(
    connection: sa.Connection,
    changes: Sequence[tuple[str, list[str], Mapping[str, Any]]],
    reason: str,
    execution_id: str | None,
    now: float,
) -> dict[str, RoutingOrder]:
    """Replace the order of each category ``changes`` names (category, nodes, the change as the
    history keeps it), each change in the history with it; the orders as they read after."""
    for category, nodes, change in changes:
        put_routing(connection, category, nodes, reason, execution_id, now)
        add_history(connection, "routing", category, change, execution_id, now)
    return routing(connection)


def apply_prompt(
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
    """``prompts.add_version``, and the change in the history when it is made: the new version,
    or None when ``parent`` is no longer the active one."""
    version = prompts.add_version(
        connection,
        category,
        text,
        parent=parent,
        baseline=baseline,
        reason=reason,
        execution_id=execution_id,
        now=now,
    )
    if version is not None:
        detail = {"from": parent, "to": version, "reason": reason, "baseline": baseline,
                  "text": text}  # fmt: skip
        add_history(connection, "prompt", category, detail, execution_id, now)
    return version


@dataclass(frozen=True, slots=True)
class Rollback:
    """A category's watched ``version`` rolled back to ``restored``, and why."""

    category: str
    version: int
    restored: int
    reason: str

    def as_json(self) -> JSONObject:
        """The rollback as the history keeps it, with its category."""
        return {"category": self.category, **self.detail}

    @property
    def detail(self) -> JSONObject:
        return {"from": self.version, "to": self.restored, "reason": self.reason}


def roll_back_prompts(
    connection: sa.Connection,
    rollbacks: Sequence[tuple[str, int, str]],
    execution_id: str | None,
    now: float,
) -> list[Rollback]:
    """Roll back each (category, version, reason) still active (``prompts.roll_back``), each in
    the history; those rolled back."""
    done = []
    for category, version, reason in rollbacks:
        restored = prompts.roll_back(connection, category, version)
        if restored is not None:
            done.append(Rollback(category, version, restored, reason))
            add_history(connection, "rollback", category, done[-1].detail, execution_id, now)
    return done


@dataclass(frozen=True, slots=True)
class Learned:
    """What the autolearn loops learned, read in one transaction: samples in the window, tuned
    orders, active instructions, users remembered (and summarized), each loop's last
    executions."""

    samples: list[ChatSample]
    routing: dict[str, RoutingOrder]
    prompts: dict[str, PromptVersion]
    remembered: tuple[int, int]
    last: dict[str, list[ExecutionRow]]


def learned(connection: sa.Connection, window: int, loops: Sequence[str]) -> Learned:
    """What the autolearn loops learned, the last execution of each of ``loops``."""
    return Learned(
        samples_in_window(connection, window),
        routing(connection),
        prompts.active(connection),
        memory.counts(connection),
        {loop: executions.list_executions(connection, loop_id=loop, limit=1) for loop in loops},
    )


Remembered = tuple[str, dict[str, Any], int]
"""An exchange to keep in a user's memory: ``(user, exchange, keep)``."""


@dataclass(frozen=True, slots=True)
class ChatReading:
    """What a chat message is answered with of what the autolearn loops wrote: the tuned orders,
    each node's responses in its category and newest response id (``exploration_counts``), the
    category's active instructions and the user's memory."""

    routing: dict[str, RoutingOrder]
    explored: dict[str, tuple[int, int]]
    prompt: PromptVersion | None
    remembered: UserMemory | None


def chat_reading(
    connection: sa.Connection, category: str, nodes: Sequence[str], cap: int, user: str | None
) -> ChatReading:
    """What the autolearn loops wrote that a message of ``category`` from ``user`` is answered
    with, ``nodes`` counted up to ``cap``."""
    return ChatReading(
        routing(connection),
        exploration_counts(connection, category, nodes, cap),
        prompts.active_of(connection, category),
        memory.profile(connection, user) if user else None,
    )


def record_answer(
    connection: sa.Connection,
    samples: Sequence[Mapping[str, Any]],
    remembered: Remembered | None,
    now: float,
) -> None:
    """Record an answered message's responses to score and, for a known user, the exchange
    (``(user, exchange, keep)``) in their memory, together."""
    insert_samples(connection, samples)
    if remembered is not None:
        user, exchange, keep = remembered
        memory.add_exchange(connection, user, exchange, keep, now)


@dataclass(frozen=True, slots=True)
class ChatStart:
    """What a message is answered with, read together: what the autolearn loops wrote, the
    session's thread, whether it holds the message already (a step run again) and, for a
    process that does not hold it yet, the nodes' health."""

    reading: ChatReading
    thread: threads.Thread
    asked: bool
    nodes: list[health.NodeHealthRow] | None


def chat_start(
    connection: sa.Connection,
    category: str,
    nodes: Sequence[str],
    cap: int,
    user: str | None,
    session_id: str,
    asked: str,
    with_health: bool,
) -> ChatStart:
    """Everything a message of ``category`` from ``user`` in ``session_id``, appended by the
    operation ``asked``, starts from, in one read (``chat_reading``, ``threads.read_thread``,
    ``threads.applied`` and, ``with_health``, the nodes' health)."""
    return ChatStart(
        chat_reading(connection, category, nodes, cap, user),
        threads.read_thread(connection, session_id),
        threads.applied(connection, session_id, asked),
        health.load_health(connection) if with_health else None,
    )


@dataclass(frozen=True, slots=True)
class RecordReply:
    """An answered message, written with the commit of the step that answered it, so the
    exchange is kept exactly when its execution's record is: its ``batches`` appended to a
    thread held at a version (``threads.extend_thread``), the nodes' health, and
    ``record_answer``'s responses to score and memory."""

    batches: tuple[tuple[threads.Batch, int], ...]
    """What the thread gains, each at the version it follows: the message and its reply as one
    batch, or the reply alone when a round of tool calls wrote the message first."""
    nodes: Sequence[health.NodeHealthRow] | None
    """The nodes' health to record; None when it did not change."""
    samples: Sequence[Mapping[str, Any]]
    remembered: Remembered | None
    at: float

    def apply(self, connection: sa.Connection) -> None:
        """A batch the thread's rules refuse (``ThreadError``: its operation applied with another
        body meanwhile) is left out, in a savepoint, and the rest is kept: the execution's record
        holds the reply either way."""
        for batch, version in self.batches:
            try:
                with connection.begin_nested():
                    threads.extend_thread(connection, batch, version)
            except ThreadError:
                continue
        if self.nodes is not None:
            health.save_health(connection, self.nodes)
        record_answer(connection, self.samples, self.remembered, self.at)
