"""The order a category's nodes are tried in, and the routing the autolearn views show: the same
rule, so what ``autolearn scores`` prints is what the chat follows."""

from __future__ import annotations

from loopengine.contract import Cluster as ClusterConfig
from loopengine.contract import Config
from loopengine.llm import followed_routing
from loopengine.llm._routing import route_order

NODE = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
CLUSTER = ClusterConfig.model_validate(
    {"nodes": {"OL1": NODE, "M1": NODE, "M2": NODE}, "routing": {"code": ["OL1", "M1"]}}
)


def test_a_tuned_order_drops_nodes_gone_and_is_followed_by_the_configs_others() -> None:
    assert route_order(CLUSTER, "code", {"code": ["M1", "GONE"]}) == ["M1", "OL1"]


def test_a_category_without_an_order_tries_every_node() -> None:
    assert route_order(CLUSTER, "chat", {}) == ["OL1", "M1", "M2"]


def test_the_views_show_the_order_the_chat_follows() -> None:
    config = Config.model_validate({"cluster": CLUSTER.model_dump()})
    tuned = {"code": {"nodes": ["M1", "GONE"]}, "chat": {"nodes": ["M2"]}}
    assert followed_routing(config, tuned) == {
        "code": ["M1", "OL1"],
        "chat": ["M2", "OL1", "M1"],
    }
