"""OpenAI-compatible clients, cluster health and routing, tool-call parsing, tools, the agent loop
with its anti-loop guard, the reflexive chain and chat threads."""

from loopengine.llm._agent import Hooks, RoundCommit, run_agent
from loopengine.llm._chain import (
    DEFAULT_STAGES,
    ChainResult,
    StageSpec,
    chain_stages,
    run_chain,
    run_simple,
)
from loopengine.llm._classify import classify_complexity
from loopengine.llm._client import ChatClient
from loopengine.llm._cluster import Cluster
from loopengine.llm._conversation import Conversation
from loopengine.llm._guard import LoopGuard, call_key, canonical
from loopengine.llm._health import COOL_AFTER, NodeHealth
from loopengine.llm._learned import (
    AUTOLEARN_LOOPS,
    followed_routing,
    history_view,
    nothing_learned,
    read_learned,
    scores_view,
    status_view,
)
from loopengine.llm._runtime import LLMRuntime
from loopengine.llm._scores import NodeScore, Sample, Tuning, parse_grade, score_nodes, tune
from loopengine.llm._stats import LATENCY_BUCKETS_S, NodeStats
from loopengine.llm._stream import Assembly, event_data, token_usage
from loopengine.llm._threads import (
    append_batch,
    load_thread,
    mask_pii,
    prune,
    thread_version,
    with_fresh_call_ids,
)
from loopengine.llm._toolcalls import new_call_id, parse_arguments, parse_reply
from loopengine.llm._tools import (
    MAX_READ,
    TOOL_TIMEOUT_S,
    Toolbox,
    ToolOutcome,
    builtin_tools,
    checked_address,
    offered_tools,
    reaches_inside,
)

__all__ = [
    "AUTOLEARN_LOOPS",
    "COOL_AFTER",
    "DEFAULT_STAGES",
    "LATENCY_BUCKETS_S",
    "MAX_READ",
    "TOOL_TIMEOUT_S",
    "Assembly",
    "ChainResult",
    "ChatClient",
    "Cluster",
    "Conversation",
    "Hooks",
    "LLMRuntime",
    "LoopGuard",
    "NodeHealth",
    "NodeScore",
    "NodeStats",
    "RoundCommit",
    "Sample",
    "StageSpec",
    "ToolOutcome",
    "Toolbox",
    "Tuning",
    "append_batch",
    "builtin_tools",
    "call_key",
    "canonical",
    "chain_stages",
    "checked_address",
    "classify_complexity",
    "event_data",
    "followed_routing",
    "history_view",
    "load_thread",
    "mask_pii",
    "new_call_id",
    "nothing_learned",
    "offered_tools",
    "parse_arguments",
    "parse_grade",
    "parse_reply",
    "prune",
    "reaches_inside",
    "read_learned",
    "run_agent",
    "run_chain",
    "run_simple",
    "score_nodes",
    "scores_view",
    "status_view",
    "thread_version",
    "token_usage",
    "tune",
    "with_fresh_call_ids",
]
