"""What the autolearn loops learned, as ``loopengine autolearn`` prints it and the daemon's
``GET /autolearn/*`` answers it: the store's records (``store.autolearn.learned``…) shaped for
JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from loopengine._json import JSONObject
from loopengine.autolearn._scores import Sample, score_nodes
from loopengine.contract import Config
from loopengine.llm import DEFAULT_CATEGORY, OrderSource, order_source, route_order
from loopengine.store import UserMemory, iso
from loopengine.store.autolearn import HistoryEntry, Learned, RoutingOrder

__all__ = [
    "AUTOLEARN_LOOPS",
    "AutolearnLoop",
    "FollowedOrder",
    "followed_routing",
    "history_view",
    "memory_view",
    "scores_view",
    "status_view",
]

AutolearnLoop = Literal["autotune", "autoreview", "memory"]
"""The shipped autolearn loops."""
AUTOLEARN_LOOPS: tuple[AutolearnLoop, ...] = get_args(AutolearnLoop)


@dataclass(frozen=True, slots=True)
class FollowedOrder:
    """A category's routing order the chat follows, and where it comes from."""

    nodes: list[str]
    order: OrderSource

    def as_json(self) -> JSONObject:
        return {"nodes": self.nodes, "order": self.order}


def followed_routing(config: Config, tuned: Mapping[str, RoutingOrder]) -> dict[str, FollowedOrder]:
    """Each category's routing order the chat follows (``Cluster.route``: the tuned one,
    ``autolearn.routing``'s, over the config's) and where it comes from (``tuned``,
    ``configured`` or ``fallback``); ``default`` always, the others the config or the autotune
    loop name."""
    cluster, grader = config.cluster, config.autolearn.grader
    if not cluster.nodes:
        return {}
    orders = {c: list(order.nodes) for c, order in tuned.items()}
    categories = dict.fromkeys([*cluster.routing, *orders, DEFAULT_CATEGORY])
    return {
        c: FollowedOrder(route_order(cluster, c, orders, grader), order_source(cluster, c, orders))
        for c in categories
    }


def scores_view(config: Config, learned: Learned) -> JSONObject:
    """Each category's nodes with their scores, and the routing the chat follows."""
    scored = score_nodes([Sample.of(row) for row in learned.samples], config.autolearn.window)
    return {
        "categories": {c: [n.as_dict() for n in nodes] for c, nodes in scored.items()},
        "routing": {c: f.as_json() for c, f in followed_routing(config, learned.routing).items()},
    }


def status_view(learned: Learned) -> dict[str, Any]:
    """Responses scored and graded, the tuned orders, each loop's last execution."""
    samples = learned.samples
    tuned = {
        category: {
            "nodes": order.nodes,
            "version": order.version,
            "reason": order.reason,
            "updated_at": iso(order.updated_at),
        }
        for category, order in learned.routing.items()
    }
    instructions = {
        category: {
            "version": prompt.version,
            "state": prompt.state,
            "reason": prompt.reason,
            "updated_at": iso(prompt.created_at),
        }
        for category, prompt in learned.prompts.items()
    }
    users, summarized = learned.remembered
    return {
        "samples": len(samples),
        "graded": sum(1 for s in samples if s.quality is not None),
        "tuned": tuned,
        "prompts": instructions,
        "memory": {"users": users, "summarized": summarized},
        "loops": {loop: rows[0].summary() if rows else None for loop, rows in learned.last.items()},
    }


def memory_view(remembered: list[UserMemory]) -> list[dict[str, Any]]:
    """What the chat remembers of each user: exchanges made, profile, deep summary and which
    node wrote it."""
    return [
        {
            "user": found.user_id,
            "exchanges": found.exchanges,
            "profile": found.profile,
            "summary": found.summary,
            "summary_node": found.summary_node,
            "summarized_at_exchange": found.summarized_at,
            "updated_at": iso(found.updated_at),
        }
        for found in remembered
    ]


def history_view(history: list[HistoryEntry]) -> list[JSONObject]:
    """Every change, newest first."""
    return [entry.as_json() for entry in history]
