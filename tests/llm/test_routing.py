"""The category a message is routed by, the order its nodes are tried in, and the routing the
autolearn views show: the same rules, so what ``autolearn scores`` prints is what the chat
follows. The grader (``autolearn.grader``) answers no message the config does not route to it."""

from __future__ import annotations

import pytest

from loopengine.autolearn import FollowedOrder, followed_routing
from loopengine.contract import Cluster as ClusterConfig
from loopengine.contract import Config
from loopengine.llm import message_category
from loopengine.llm._routing import route_order
from loopengine.store.autolearn import RoutingOrder

NODE = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
CLUSTER = ClusterConfig.model_validate(
    {"nodes": {"OL1": NODE, "M1": NODE, "M2": NODE}, "routing": {"code": ["OL1", "M1"]}}
)


@pytest.mark.parametrize(
    ("routing", "given", "mode", "category"),
    [
        ({"simple": ["OL1"]}, "code", "simple", "code"),
        ({"simple": ["OL1"]}, None, "simple", "simple"),
        ({"simple": ["OL1"]}, "", "simple", "simple"),
        ({"simple": ["OL1"]}, None, "reflexive", "default"),
        ({"reflexive": ["M1"]}, None, "reflexive", "reflexive"),
        ({}, None, "simple", "default"),
    ],
    ids=["given", "mode-routed", "empty-given", "mode-not-routed", "reflexive", "no-routing"],
)
def test_a_messages_category_is_the_one_given_else_its_routed_mode_else_default(
    routing: dict[str, list[str]], given: str | None, mode: str, category: str
) -> None:
    assert message_category(routing, given, mode) == category


def test_a_tuned_order_drops_nodes_gone_and_is_followed_by_the_configs_others() -> None:
    assert route_order(CLUSTER, "code", {"code": ["M1", "GONE"]}) == ["M1", "OL1"]


def test_a_category_without_an_order_tries_every_node() -> None:
    assert route_order(CLUSTER, "chat", {}) == ["OL1", "M1", "M2"]


def test_a_category_without_an_order_tries_every_node_but_the_grader() -> None:
    assert route_order(CLUSTER, "chat", {}, "OL1") == ["M1", "M2"]


def test_the_grader_is_tried_where_the_config_routes_it() -> None:
    assert route_order(CLUSTER, "code", {}, "OL1") == ["OL1", "M1"]


def test_a_tuned_order_that_holds_the_grader_is_followed_without_it() -> None:
    assert route_order(CLUSTER, "chat", {"chat": ["OL1", "M2"]}, "OL1") == ["M2", "M1"]


def test_the_only_node_of_a_cluster_is_tried_though_it_grades() -> None:
    alone = ClusterConfig.model_validate({"nodes": {"OL1": NODE}})
    assert route_order(alone, "default", {}, "OL1") == ["OL1"]


def test_the_views_show_the_order_the_chat_follows_and_where_it_comes_from() -> None:
    config = Config.model_validate(
        {"cluster": CLUSTER.model_dump(), "autolearn": {"grader": "OL1"}}
    )
    tuned = {
        category: RoutingOrder(category, nodes, 1, "tuned", None, 0.0)
        for category, nodes in (("code", ["M1", "GONE"]), ("chat", ["M2"]))
    }
    assert followed_routing(config, tuned) == {
        "code": FollowedOrder(["M1", "OL1"], "tuned"),
        "chat": FollowedOrder(["M2", "M1"], "tuned"),
        "default": FollowedOrder(["M1", "M2"], "fallback"),
    }
    assert followed_routing(config, {})["code"] == FollowedOrder(["OL1", "M1"], "configured")
