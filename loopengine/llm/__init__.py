"""OpenAI-compatible clients, cluster health and routing, tool-call parsing, the toolbox, the
agent loop with its anti-loop guard, the reflexive chain, chat threads, and what the autolearn
loops decide (scores, users' memory, reviews of the chat's instructions)."""

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
from loopengine.llm._client import ChatClient
from loopengine.llm._cluster import Cluster, Explore
from loopengine.llm._conversation import Conversation
from loopengine.llm._guard import LoopGuard, call_key, canonical
from loopengine.llm._health import COOL_AFTER, NodeHealth
from loopengine.llm._learned import (
    AUTOLEARN_LOOPS,
    AutolearnLoop,
    followed_routing,
    history_view,
    memory_view,
    scores_view,
    status_view,
)
from loopengine.llm._memory import (
    Exchange,
    Profile,
    detect_profile,
    memory_context,
    read_summary,
    summary_messages,
)
from loopengine.llm._pattern import (
    MAX_NESTING,
    MAX_PATTERN,
    MAX_UNROLLED,
    PatternSize,
    check_pattern,
    pattern_size,
)
from loopengine.llm._review import (
    REVIEW_THRESHOLD,
    Review,
    Vote,
    Weak,
    category_means,
    decide_candidate,
    judge_version,
    judged_grade,
    parse_proposal,
    parse_vote,
    review_messages,
    validated,
    validation_messages,
    vote_messages,
    weakest,
    worth_replaying,
)
from loopengine.llm._routing import message_category
from loopengine.llm._scores import (
    NodeScore,
    Sample,
    Tuning,
    explored,
    parse_grade,
    score_nodes,
    tune,
)
from loopengine.llm._stats import LATENCY_BUCKETS_S, NodeStats
from loopengine.llm._stream import Assembly, event_data, token_usage
from loopengine.llm._threads import mask_pii, new_batch, prune, with_fresh_call_ids
from loopengine.llm._toolbox import TOOL_TIMEOUT_S, Toolbox, ToolOutcome
from loopengine.llm._toolcalls import new_call_id, parse_arguments, parse_reply
from loopengine.llm._trends import MAX_ANALYSIS, trend_messages, trends

__all__ = [
    "AUTOLEARN_LOOPS",
    "COOL_AFTER",
    "DEFAULT_STAGES",
    "LATENCY_BUCKETS_S",
    "MAX_ANALYSIS",
    "MAX_NESTING",
    "MAX_PATTERN",
    "MAX_UNROLLED",
    "REVIEW_THRESHOLD",
    "TOOL_TIMEOUT_S",
    "Assembly",
    "AutolearnLoop",
    "ChainResult",
    "ChatClient",
    "Cluster",
    "Conversation",
    "Exchange",
    "Explore",
    "Hooks",
    "LoopGuard",
    "NodeHealth",
    "NodeScore",
    "NodeStats",
    "PatternSize",
    "Profile",
    "Review",
    "RoundCommit",
    "Sample",
    "StageSpec",
    "ToolOutcome",
    "Toolbox",
    "Tuning",
    "Vote",
    "Weak",
    "answer_messages",
    "call_key",
    "canonical",
    "category_means",
    "chain_stages",
    "check_pattern",
    "classify_complexity",
    "decide_candidate",
    "detect_profile",
    "event_data",
    "explored",
    "followed_routing",
    "history_view",
    "judge_version",
    "judged_grade",
    "mask_pii",
    "memory_context",
    "memory_view",
    "message_category",
    "new_batch",
    "new_call_id",
    "parse_arguments",
    "parse_grade",
    "parse_proposal",
    "parse_reply",
    "parse_vote",
    "pattern_size",
    "prune",
    "read_summary",
    "review_messages",
    "run_agent",
    "run_chain",
    "run_simple",
    "score_nodes",
    "scores_view",
    "status_view",
    "summary_messages",
    "token_usage",
    "trend_messages",
    "trends",
    "tune",
    "validated",
    "validation_messages",
    "vote_messages",
    "weakest",
    "with_fresh_call_ids",
    "worth_replaying",
]
