"""Reading what the models reply: a grader's relevance, a rewritten query, an answer and its
citations. Every reply is untrusted, so each is read strictly and bounded, and anything else
reads as no grade, no query or a failed answer; pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from loopengine._json import JSONObject
from loopengine._text import CONTROL, drop_think
from loopengine.knowledge.corrective._refining import Evidence

__all__ = [
    "MAX_ANSWER",
    "MAX_QUERY",
    "MAX_READ",
    "Checked",
    "Citation",
    "evidence_range",
    "parse_citations",
    "read_answer",
    "read_grade",
    "read_rewrite",
]

MAX_READ = 32_000
"""Characters of a model's reply read at all (a ``<think>`` block included); longer is unusable."""
MAX_QUERY = 200
"""Characters of a rewritten query."""
MAX_ANSWER = 8_000
"""Characters of an answer (its ``<think>`` block dropped)."""
_MAX_GRADE = 200
"""Characters of a grader's reply once its ``<think>`` block is dropped."""

_NUMBER = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,12})?|\.[0-9]{1,12}")
_JSON_SCORE = re.compile(r'\{\s*"score"\s*:\s*([0-9]{1,3}(?:\.[0-9]{1,12})?)\s*\}')
_CITATION = re.compile(r"(?<!\w)\[([0-9]{1,6}(?:\s*,\s*[0-9]{1,6})*)\]")
_LABEL = re.compile(r"\A(?:(?:search|new|rewritten)\s+)?query\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Citation:
    """An answer's ``[n]``, resolved to the evidence it names."""

    n: int
    source: str
    heading: str

    @property
    def ref(self) -> str:
        """``source#heading`` (the source alone when the chunk has no heading)."""
        return f"{self.source}#{self.heading}" if self.heading else self.source

    def as_json(self) -> JSONObject:
        return {"n": self.n, "source": self.source, "heading": self.heading}


@dataclass(frozen=True, slots=True)
class Checked:
    """An answer read back: its text and citations, or the ``problem`` that fails it."""

    text: str
    citations: tuple[Citation, ...] = ()
    problem: str | None = None


def read_grade(text: str) -> float:
    """The grader's relevance: a bare number 0–1 or exactly ``{"score": n}`` after an optional
    ``<think>`` block; anything else (prose, out of range, oversized) reads 0."""
    if len(text) > MAX_READ:
        return 0.0
    reply = drop_think(text).strip()
    if len(reply) > _MAX_GRADE:
        return 0.0
    found = _NUMBER.fullmatch(reply) or _JSON_SCORE.fullmatch(reply)
    if found is None:
        return 0.0
    value = float(found.group(1) if found.re is _JSON_SCORE else found.group(0))
    return value if 0.0 <= value <= 1.0 else 0.0


def evidence_range(count: int) -> str:
    """How ``count`` pieces of evidence are cited: ``[1]``, or ``[1]–[count]``."""
    return "[1]" if count == 1 else f"[1]–[{count}]"


def parse_citations(text: str) -> tuple[int, ...]:
    """The evidence numbers an answer cites (``[1]``, ``[1, 3]``, ``[1][2]``), first use first;
    a bracket right after a word (``items[0]``) is an index, not a citation."""
    numbers = (int(n) for found in _CITATION.finditer(text) for n in found.group(1).split(","))
    return tuple(dict.fromkeys(numbers))


def read_answer(text: str, evidence: Sequence[Evidence]) -> Checked:
    """An answer read back: its ``<think>`` block dropped, bounded, and every citation resolved
    to the evidence; no citation at all, or one to no evidence, is its ``problem``."""
    answer = drop_think(text).strip() if len(text) <= MAX_READ else text
    if len(answer) > MAX_ANSWER:
        return Checked("", problem=f"is longer than {MAX_ANSWER} characters")
    if not answer:
        return Checked("", problem="is empty")
    cited = parse_citations(answer)
    if not cited:
        return Checked(answer, problem="cites no evidence; each claim needs its [n]")
    numbered = {e.n: e for e in evidence}
    unknown = [n for n in cited if n not in numbered]
    if unknown:
        listed = ", ".join(f"[{n}]" for n in unknown[:5])
        given = evidence_range(len(evidence))
        return Checked(answer, problem=f"cites {listed}, not among the evidence {given}")
    citations = tuple(Citation(n, numbered[n].source, numbered[n].heading) for n in cited)
    return Checked(answer, citations)


def read_rewrite(text: str) -> str | None:
    """The rewritten query: the reply's first line after its ``<think>`` block, without quotes, a
    ``query:`` label or control characters, cut to ``MAX_QUERY`` at a word; None when empty."""
    if len(text) > MAX_READ:
        return None
    line = next((ln for ln in drop_think(text).splitlines() if ln.strip()), "")
    line = _LABEL.sub("", CONTROL.sub(" ", line).strip()).strip("\"'` ")
    query = " ".join(line.split())
    if len(query) > MAX_QUERY:
        cut = query.rfind(" ", 0, MAX_QUERY + 1)
        query = query[: cut if cut > 0 else MAX_QUERY]
    return query if any(ch.isalnum() for ch in query) else None
