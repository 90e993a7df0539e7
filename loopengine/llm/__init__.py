"""OpenAI-compatible clients, cluster health and routing, tool-call parsing, the toolbox, the
agent loop with its anti-loop guard and the reflexive chain."""

from loopengine.llm._agent import Hooks, RoundCommit, run_agent
from loopengine.llm._chain import (
    DEFAULT_STAGES,
    ChainResult,
    StageSpec,
    answer_messages,
    chain_stages,
    run_chain,
    run_simple,
)
from loopengine.llm._classify import classify_complexity
from loopengine.llm._client import MAX_DIMENSIONS, ChatClient
from loopengine.llm._cluster import Cluster, Explore
from loopengine.llm._guard import LoopGuard, call_key, canonical
from loopengine.llm._health import COOL_AFTER, NodeHealth
from loopengine.llm._pattern import (
    MAX_NESTING,
    MAX_PATTERN,
    MAX_UNROLLED,
    PatternSize,
    check_pattern,
    pattern_size,
)
from loopengine.llm._routing import (
    DEFAULT_CATEGORY,
    OrderSource,
    message_category,
    order_source,
    route_order,
)
from loopengine.llm._stats import LATENCY_BUCKETS_S, NodeStats
from loopengine.llm._stream import Assembly, event_data, token_usage
from loopengine.llm._toolbox import TOOL_TIMEOUT_S, FunctionSpec, Toolbox, ToolOutcome, ToolSpec
from loopengine.llm._toolcalls import new_call_id, parse_arguments, parse_reply

__all__ = [
    "COOL_AFTER",
    "DEFAULT_CATEGORY",
    "DEFAULT_STAGES",
    "LATENCY_BUCKETS_S",
    "MAX_DIMENSIONS",
    "MAX_NESTING",
    "MAX_PATTERN",
    "MAX_UNROLLED",
    "TOOL_TIMEOUT_S",
    "Assembly",
    "ChainResult",
    "ChatClient",
    "Cluster",
    "Explore",
    "FunctionSpec",
    "Hooks",
    "LoopGuard",
    "NodeHealth",
    "NodeStats",
    "OrderSource",
    "PatternSize",
    "RoundCommit",
    "StageSpec",
    "ToolOutcome",
    "ToolSpec",
    "Toolbox",
    "answer_messages",
    "call_key",
    "canonical",
    "chain_stages",
    "check_pattern",
    "classify_complexity",
    "event_data",
    "message_category",
    "new_call_id",
    "order_source",
    "parse_arguments",
    "parse_reply",
    "pattern_size",
    "route_order",
    "run_agent",
    "run_chain",
    "run_simple",
    "token_usage",
]
