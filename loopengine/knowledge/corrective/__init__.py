"""Corrective RAG (CRAG, Yan et al. 2024): retrieve, grade each chunk, correct the query when the
evidence is poor, and answer with citations or refuse; never answer without evidence.

The decisions are pure functions: reading a grader's reply, the verdict from the grades, knowledge
refinement (strips kept by lexical relevance, no extra model call), the prompts, reading the
rewrite and checking an answer's citations. ``corrective_answer`` runs them over injected async
callables (retrieval, grader, rewriter, answering model, optional web search), bounded in model
calls and time. Every model reply and chunk text is untrusted: read strictly and bounded.
"""

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
from loopengine.knowledge.corrective._settings import CragSettings
from loopengine.knowledge.corrective._verdicts import Thresholds, Verdict, verdict

__all__ = [
    "MAX_ANSWER",
    "MAX_QUERY",
    "MAX_READ",
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
