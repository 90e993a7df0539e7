"""Corrective RAG (CRAG, Yan et al. 2024): retrieve, grade each chunk, correct the query when the
evidence is poor, and answer with citations or refuse; never answer without evidence.

The decisions are pure functions: reading a grader's reply, the verdict from the grades, knowledge
refinement (strips kept by lexical relevance, no extra model call), the prompts, reading the
rewrite and checking an answer's citations. ``corrective_answer`` runs them over injected async
callables (retrieval, grader, rewriter, answering model, optional web search), bounded in model
calls and time. Every model reply and chunk text is untrusted: read strictly and bounded.

Names load with their module on first use: the skills' params read the pipeline's bounds
without loading the orchestrator.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.knowledge.corrective._pipeline import (
        AnswerCall,
        CragResult,
        GradeCall,
        Ports,
        Retrieve,
        RewriteCall,
        WebSearch,
        corrective_answer,
        unasked,
    )
    from loopengine.knowledge.corrective._prompts import (
        PromptMessage,
        answer_messages,
        grade_messages,
        refusal_text,
        retry_messages,
        rewrite_messages,
    )
    from loopengine.knowledge.corrective._reading import (
        MAX_ANSWER,
        MAX_QUERY,
        MAX_READ,
        Checked,
        Citation,
        parse_citations,
        read_answer,
        read_grade,
        read_rewrite,
    )
    from loopengine.knowledge.corrective._refining import ChunkLike, Evidence, Graded, refine
    from loopengine.knowledge.corrective._settings import MAX_GRADED, MAX_REWRITES, CragSettings
    from loopengine.knowledge.corrective._verdicts import Thresholds, Verdict, verdict

_EXPORTS = {
    "AnswerCall": "loopengine.knowledge.corrective._pipeline",
    "CragResult": "loopengine.knowledge.corrective._pipeline",
    "GradeCall": "loopengine.knowledge.corrective._pipeline",
    "Ports": "loopengine.knowledge.corrective._pipeline",
    "Retrieve": "loopengine.knowledge.corrective._pipeline",
    "RewriteCall": "loopengine.knowledge.corrective._pipeline",
    "WebSearch": "loopengine.knowledge.corrective._pipeline",
    "corrective_answer": "loopengine.knowledge.corrective._pipeline",
    "unasked": "loopengine.knowledge.corrective._pipeline",
    "PromptMessage": "loopengine.knowledge.corrective._prompts",
    "answer_messages": "loopengine.knowledge.corrective._prompts",
    "grade_messages": "loopengine.knowledge.corrective._prompts",
    "refusal_text": "loopengine.knowledge.corrective._prompts",
    "retry_messages": "loopengine.knowledge.corrective._prompts",
    "rewrite_messages": "loopengine.knowledge.corrective._prompts",
    "MAX_ANSWER": "loopengine.knowledge.corrective._reading",
    "MAX_QUERY": "loopengine.knowledge.corrective._reading",
    "MAX_READ": "loopengine.knowledge.corrective._reading",
    "Checked": "loopengine.knowledge.corrective._reading",
    "Citation": "loopengine.knowledge.corrective._reading",
    "parse_citations": "loopengine.knowledge.corrective._reading",
    "read_answer": "loopengine.knowledge.corrective._reading",
    "read_grade": "loopengine.knowledge.corrective._reading",
    "read_rewrite": "loopengine.knowledge.corrective._reading",
    "ChunkLike": "loopengine.knowledge.corrective._refining",
    "Evidence": "loopengine.knowledge.corrective._refining",
    "Graded": "loopengine.knowledge.corrective._refining",
    "refine": "loopengine.knowledge.corrective._refining",
    "MAX_GRADED": "loopengine.knowledge.corrective._settings",
    "MAX_REWRITES": "loopengine.knowledge.corrective._settings",
    "CragSettings": "loopengine.knowledge.corrective._settings",
    "Thresholds": "loopengine.knowledge.corrective._verdicts",
    "Verdict": "loopengine.knowledge.corrective._verdicts",
    "verdict": "loopengine.knowledge.corrective._verdicts",
}

__all__ = [
    "MAX_ANSWER",
    "MAX_GRADED",
    "MAX_QUERY",
    "MAX_READ",
    "MAX_REWRITES",
    "AnswerCall",
    "Checked",
    "ChunkLike",
    "Citation",
    "CragResult",
    "CragSettings",
    "Evidence",
    "GradeCall",
    "Graded",
    "Ports",
    "PromptMessage",
    "Retrieve",
    "RewriteCall",
    "Thresholds",
    "Verdict",
    "WebSearch",
    "answer_messages",
    "corrective_answer",
    "grade_messages",
    "parse_citations",
    "read_answer",
    "read_grade",
    "read_rewrite",
    "refine",
    "refusal_text",
    "retry_messages",
    "rewrite_messages",
    "unasked",
    "verdict",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
