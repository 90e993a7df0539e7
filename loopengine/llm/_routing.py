"""The order in which a category's nodes are tried; pure (no client is made to know it)."""

from __future__ import annotations

from collections.abc import Mapping

from loopengine.contract import Cluster as ClusterConfig

__all__ = ["route_order"]


def route_order(
    config: ClusterConfig, category: str | None, tuned: Mapping[str, list[str]]
) -> list[str]:
    """``Cluster.route`` of a cluster config, pure: the ``tuned`` order over the config's (its
    ``default``, then every node), nodes gone from the cluster left out, and those the config
    routes but the tuned order has not seen yet after it."""
    nodes, configured = config.nodes, config.routing

    def order(routing: Mapping[str, list[str]]) -> list[str]:
        return list(routing.get(category or "") or routing.get("default") or nodes)

    chosen = [*order({**configured, **tuned}), *order(configured)]
    return [name for name in dict.fromkeys(chosen) if name in nodes]
