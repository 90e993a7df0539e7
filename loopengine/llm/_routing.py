"""Which category a chat message is routed by, and the order in which that category's nodes are
tried; pure (no client is made to know it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from loopengine.contract import Cluster as ClusterConfig

__all__ = ["DEFAULT_CATEGORY", "OrderSource", "message_category", "order_source", "route_order"]

DEFAULT_CATEGORY = "default"
OrderSource = Literal["tuned", "configured", "fallback"]
"""Where a category's order comes from: the autotune loop, the config's ``routing``, or neither
(every node but the grader)."""


def message_category(routing: Mapping[str, Sequence[str]], given: str | None, mode: str) -> str:
    """A message's category: the one given, else its ``mode`` (``simple`` / ``reflexive``) when
    the config's ``routing`` names it, else ``default``."""
    if given:
        return given
    return mode if mode in routing else DEFAULT_CATEGORY


def _fallback(config: ClusterConfig, grader: str | None) -> list[str]:
    """Every node in file order but the grader (kept when it is the only one)."""
    others = [name for name in config.nodes if name != grader]
    return others or list(config.nodes)


def _followed(
    config: ClusterConfig, category: str, tuned: Mapping[str, Sequence[str]]
) -> tuple[OrderSource, list[str]]:
    """The order ``category`` follows and where it comes from: its tuned one, else its configured
    one, else ``default``'s (tuned, else configured), else none."""
    for name in (category, DEFAULT_CATEGORY):
        if tuned.get(name):
            return "tuned", list(tuned[name])
        if config.routing.get(name):
            return "configured", list(config.routing[name])
    return "fallback", []


def route_order(
    config: ClusterConfig,
    category: str,
    tuned: Mapping[str, Sequence[str]],
    grader: str | None = None,
) -> list[str]:
    """``Cluster.route`` of a cluster config, pure: the ``tuned`` order over the config's (its
    ``default``, then every node but the ``grader``), nodes gone from the cluster left out, and
    those the config routes but the tuned order has not seen yet after it. The grader is only in
    an order the config gives it (or in a cluster of one node): it grades the chat's answers."""
    allowed = _followed(config, category, {})[1] or _fallback(config, grader)
    chosen = dict.fromkeys([*_followed(config, category, tuned)[1], *allowed])
    return [n for n in chosen if n in config.nodes and (n != grader or n in allowed)]


def order_source(
    config: ClusterConfig, category: str, tuned: Mapping[str, Sequence[str]]
) -> OrderSource:
    """Where the order ``route_order`` follows for ``category`` comes from."""
    return _followed(config, category, tuned)[0]
