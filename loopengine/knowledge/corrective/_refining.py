"""CRAG's knowledge refinement without a model call: the graded chunks cut into strips, and the
strips relevant to the queries kept as numbered evidence within a character budget. Chunk text
is untrusted, so only a bounded part of it is read; pure."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from loopengine._json import JSONObject
from loopengine.knowledge.corrective._settings import CragSettings

__all__ = ["SHOWN_QUESTION", "ChunkLike", "Evidence", "Graded", "chunk_key", "refine"]

SHOWN_QUESTION = 2_000
"""Characters of the question (and of each query) that count: matched here, shown to a model."""
_STRIP_CHARS = 400
"""A sentence longer than this is cut into windows of it (CRAG's "strips")."""
_REFINED_CHARS = 20_000
"""Characters of a chunk's text that refinement reads."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NOT_SPACE = re.compile(r"\S")
_WORD = re.compile(r"\w{2,}")


class ChunkLike(Protocol):
    """What the pipeline reads of a retrieved chunk (the index's ``Chunk`` has these fields)."""

    @property
    def source(self) -> str: ...
    @property
    def heading(self) -> str: ...
    @property
    def position(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Graded:
    """A chunk, the grade it got and the query (or web search) that found it."""

    chunk: ChunkLike
    grade: float
    query: str
    web: bool = False

    def as_json(self) -> JSONObject:
        c = self.chunk
        return {
            "query": self.query,
            "source": c.source,
            "heading": c.heading,
            "position": c.position,
            "grade": self.grade,
            "web": self.web,
        }


@dataclass(frozen=True, slots=True)
class Evidence:
    """A refined chunk as the answering model sees it, numbered ``n`` for its citations."""

    n: int
    source: str
    heading: str
    position: int
    grade: float
    text: str

    def as_json(self) -> JSONObject:
        return {
            "n": self.n,
            "source": self.source,
            "heading": self.heading,
            "position": self.position,
            "grade": self.grade,
            "text": self.text,
        }


def chunk_key(chunk: ChunkLike) -> tuple[str, str, int]:
    """What makes a chunk the same one when found again."""
    return (chunk.source, chunk.heading, chunk.position)


def _strips(text: str) -> list[str]:
    """A chunk cut into sentences (at line ends, and at white space after '.', '!' or '?'), a
    long one into windows; each character looked at a bounded number of times."""
    return [
        strip
        for line in text[:_REFINED_CHARS].split("\n")
        for sentence in _SENTENCE_END.split(line)
        for strip in _windows(sentence.strip())
    ]


def _windows(sentence: str) -> Iterator[str]:
    """``sentence`` in windows of at most ``_STRIP_CHARS``, cut at the last space of each, the
    white space between them left out; a last one without a letter or digit is dropped."""
    start = 0
    while len(sentence) - start > _STRIP_CHARS:
        cut = sentence.rfind(" ", start + 1, start + _STRIP_CHARS)
        cut = cut if cut > start else start + _STRIP_CHARS
        yield sentence[start:cut].rstrip()
        following = _NOT_SPACE.search(sentence, cut)
        start = len(sentence) if following is None else following.start()
    if any(ch.isalnum() for ch in sentence[start:]):
        yield sentence[start:]


def _terms(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _scored(strips: Sequence[Sequence[str]], queries: Sequence[str]) -> list[list[float]]:
    """Each strip's relevance: the IDF-weighted query terms it holds (rare terms weigh more)."""
    wanted = set().union(*(_terms(q[:SHOWN_QUESTION]) for q in queries))
    held = [[_terms(strip) & wanted for strip in chunk] for chunk in strips]
    count = sum(len(chunk) for chunk in held) or 1
    frequency: dict[str, int] = {}
    for terms in (terms for chunk in held for terms in chunk):
        for term in terms:
            frequency[term] = frequency.get(term, 0) + 1
    weight = {term: math.log(1 + count / n) for term, n in frequency.items()}
    return [[sum(weight[t] for t in terms) for terms in chunk] for chunk in held]


def refine(
    graded: Iterable[Graded], queries: Sequence[str], settings: CragSettings
) -> tuple[Evidence, ...]:
    """CRAG's knowledge refinement without a model call: chunks graded above ``lower`` (best
    first, at most ``max_evidence``) cut into strips; each keeps its most relevant strip, then
    the other strips matching the queries fill ``budget_chars``, shown in document order."""
    lower = settings.thresholds.lower
    unique = {
        chunk_key(g.chunk): g for g in sorted(graded, key=lambda g: g.grade) if g.grade > lower
    }
    kept = sorted(unique.values(), key=lambda g: -g.grade)[: settings.max_evidence]
    strips = [_strips(g.chunk.text) for g in kept]
    scores = _scored(strips, queries)
    best = [
        (rank, max(range(len(s)), key=lambda i: (s[i], -i))) for rank, s in enumerate(scores) if s
    ]
    matching = sorted(
        (-score, rank, index)
        for rank, chunk in enumerate(scores)
        for index, score in enumerate(chunk)
        if score > 0
    )
    chosen: list[set[int]] = [set() for _ in kept]
    room = settings.budget_chars
    for rank, index in [*best, *((rank, index) for _, rank, index in matching)]:
        size = len(strips[rank][index]) + 1
        if index not in chosen[rank] and size <= room:
            chosen[rank].add(index)
            room -= size
    evidence = [(g, _joined(strips[r], chosen[r])) for r, g in enumerate(kept) if chosen[r]]
    return tuple(
        Evidence(n, g.chunk.source, g.chunk.heading, g.chunk.position, g.grade, text)
        for n, (g, text) in enumerate(evidence, 1)
    )


def _joined(strips: Sequence[str], chosen: set[int]) -> str:
    """The kept strips in document order, ``…`` where strips between them were left out."""
    indices = sorted(chosen)
    parts = [strips[indices[0]]]
    for before, index in pairwise(indices):
        parts.append(("… " if index > before + 1 else "") + strips[index])
    return " ".join(parts)
