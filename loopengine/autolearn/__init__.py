"""Autolearn: the pure decisions of its loops (scores and the routing order they give, reviews
of a category's instructions, users' memory, score trends), the read models ``loopengine
autolearn`` and ``GET /autolearn/*`` print, and its skills (registered with the built-ins).

Names load with their module on first use: registering the skills imports no decision.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.autolearn._learned import (
        AUTOLEARN_LOOPS,
        AutolearnLoop,
        FollowedOrder,
        followed_routing,
        history_view,
        memory_view,
        scores_view,
        status_view,
    )
    from loopengine.autolearn._memory import (
        Exchange,
        Profile,
        detect_profile,
        memory_context,
        read_summary,
        summary_messages,
    )
    from loopengine.autolearn._review import (
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
    from loopengine.autolearn._scores import (
        NodeScore,
        Sample,
        Tuning,
        explored,
        parse_grade,
        score_nodes,
        tune,
    )
    from loopengine.autolearn._trends import (
        MAX_ANALYSIS,
        trend_messages,
        trends,
    )

_EXPORTS = {
    "AUTOLEARN_LOOPS": "loopengine.autolearn._learned",
    "AutolearnLoop": "loopengine.autolearn._learned",
    "FollowedOrder": "loopengine.autolearn._learned",
    "followed_routing": "loopengine.autolearn._learned",
    "history_view": "loopengine.autolearn._learned",
    "memory_view": "loopengine.autolearn._learned",
    "scores_view": "loopengine.autolearn._learned",
    "status_view": "loopengine.autolearn._learned",
    "Exchange": "loopengine.autolearn._memory",
    "Profile": "loopengine.autolearn._memory",
    "detect_profile": "loopengine.autolearn._memory",
    "memory_context": "loopengine.autolearn._memory",
    "read_summary": "loopengine.autolearn._memory",
    "summary_messages": "loopengine.autolearn._memory",
    "REVIEW_THRESHOLD": "loopengine.autolearn._review",
    "Review": "loopengine.autolearn._review",
    "Vote": "loopengine.autolearn._review",
    "Weak": "loopengine.autolearn._review",
    "category_means": "loopengine.autolearn._review",
    "decide_candidate": "loopengine.autolearn._review",
    "judge_version": "loopengine.autolearn._review",
    "judged_grade": "loopengine.autolearn._review",
    "parse_proposal": "loopengine.autolearn._review",
    "parse_vote": "loopengine.autolearn._review",
    "review_messages": "loopengine.autolearn._review",
    "validated": "loopengine.autolearn._review",
    "validation_messages": "loopengine.autolearn._review",
    "vote_messages": "loopengine.autolearn._review",
    "weakest": "loopengine.autolearn._review",
    "worth_replaying": "loopengine.autolearn._review",
    "NodeScore": "loopengine.autolearn._scores",
    "Sample": "loopengine.autolearn._scores",
    "Tuning": "loopengine.autolearn._scores",
    "explored": "loopengine.autolearn._scores",
    "parse_grade": "loopengine.autolearn._scores",
    "score_nodes": "loopengine.autolearn._scores",
    "tune": "loopengine.autolearn._scores",
    "MAX_ANALYSIS": "loopengine.autolearn._trends",
    "trend_messages": "loopengine.autolearn._trends",
    "trends": "loopengine.autolearn._trends",
}

__all__ = [
    "AUTOLEARN_LOOPS",
    "MAX_ANALYSIS",
    "REVIEW_THRESHOLD",
    "AutolearnLoop",
    "Exchange",
    "FollowedOrder",
    "NodeScore",
    "Profile",
    "Review",
    "Sample",
    "Tuning",
    "Vote",
    "Weak",
    "category_means",
    "decide_candidate",
    "detect_profile",
    "explored",
    "followed_routing",
    "history_view",
    "judge_version",
    "judged_grade",
    "memory_context",
    "memory_view",
    "parse_grade",
    "parse_proposal",
    "parse_vote",
    "read_summary",
    "review_messages",
    "score_nodes",
    "scores_view",
    "status_view",
    "summary_messages",
    "trend_messages",
    "trends",
    "tune",
    "validated",
    "validation_messages",
    "vote_messages",
    "weakest",
    "worth_replaying",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
