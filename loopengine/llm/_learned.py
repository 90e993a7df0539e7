"""What the autolearn loops learned, as ``loopengine autolearn`` prints it and the daemon's
``GET /autolearn/*`` answers it: read in one transaction, shaped for JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

import sqlalchemy as sa

from loopengine.contract import Config
from loopengine.llm._routing import DEFAULT_CATEGORY, order_source, route_order
from loopengine.llm._scores import Sample, score_nodes
from loopengine.store import autolearn, executions, iso, memory, prompts

__all__ = [
    "AUTOLEARN_LOOPS",
    "AutolearnLoop",
    "followed_routing",
    "history_view",
    "memory_view",
    "read_learned",
    "read_memory",
    "scores_view",
    "status_view",
]

AutolearnLoop = Literal["autotune", "autoreview", "memory"]
"""The shipped autolearn loops."""
AUTOLEARN_LOOPS: tuple[AutolearnLoop, ...] = get_args(AutolearnLoop)


def read_learned(connection: sa.Connection, window: int) -> dict[str, Any]:
    """Samples in the window, tuned orders, active instructions, how many users are remembered
    (and summarized) and the loops' last executions."""
    return {
        "samples": autolearn.samples_in_window(connection, window),
        "routing": autolearn.routing(connection),
        "prompts": prompts.active(connection),
        "remembered": memory.counts(connection),
        "last": {
            loop: [
                row.summary()
                for row in executions.list_executions(connection, loop_id=loop, limit=1)
            ]
            for loop in AUTOLEARN_LOOPS
        },
    }


def followed_routing(
    config: Config, tuned: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each category's routing order the chat follows (``Cluster.route``: the tuned one,
    ``autolearn.routing`` rows, over the config's) and where it comes from (``order``:
    ``tuned``, ``configured`` or ``fallback``); ``default`` always, the others the config or
    the autotune loop name."""
    cluster, grader = config.cluster, config.autolearn.grader
    if not cluster.nodes:
        return {}
    orders = {c: list(row["nodes"]) for c, row in tuned.items()}
    categories = dict.fromkeys([*cluster.routing, *orders, DEFAULT_CATEGORY])
    return {
        c: {
            "nodes": route_order(cluster, c, orders, grader),
            "order": order_source(cluster, c, orders),
        }
        for c in categories
    }


def scores_view(config: Config, learned: dict[str, Any]) -> dict[str, Any]:
    """Each category's nodes with their scores, and the routing the chat follows."""
    scored = score_nodes([Sample.of(row) for row in learned["samples"]], config.autolearn.window)
    return {
        "categories": {c: [n.as_dict() for n in nodes] for c, nodes in scored.items()},
        "routing": followed_routing(config, learned["routing"]),
    }


def status_view(learned: dict[str, Any]) -> dict[str, Any]:
    """Responses scored and graded, the tuned orders, each loop's last execution."""
    samples = learned["samples"]
    tuned = {
        category: {
            "nodes": row["nodes"],
            "version": row["version"],
            "reason": row["reason"],
            "updated_at": iso(row["updated_at"]),
        }
        for category, row in learned["routing"].items()
    }
    instructions = {
        category: {
            "version": row["version"],
            "state": row["state"],
            "reason": row["reason"],
            "updated_at": iso(row["created_at"]),
        }
        for category, row in learned["prompts"].items()
    }
    users, summarized = learned["remembered"]
    return {
        "samples": len(samples),
        "graded": sum(1 for s in samples if s["quality"] is not None),
        "tuned": tuned,
        "prompts": instructions,
        "memory": {"users": users, "summarized": summarized},
        "loops": {loop: rows[0] if rows else None for loop, rows in learned["last"].items()},
    }


def memory_view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the chat remembers of each user (``store.memory`` rows): exchanges made, profile,
    deep summary and which node wrote it."""
    return [
        {
            "user": row["user_id"],
            "exchanges": row["exchanges"],
            "profile": row["profile"],
            "summary": row["summary"],
            "summary_node": row["summary_node"],
            "summarized_at_exchange": row["summarized_at"],
            "updated_at": iso(row["updated_at"]),
        }
        for row in rows
    ]


def read_memory(connection: sa.Connection, user: str | None) -> list[dict[str, Any]]:
    """The memory rows of ``user``, or of the users seen most recently."""
    if user is None:
        return memory.profiles(connection)
    found = memory.profile(connection, user)
    return [found] if found is not None else []


def history_view(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every change (``autolearn.history`` rows), newest first."""
    return [{**entry, "created_at": iso(entry["created_at"])} for entry in history]
