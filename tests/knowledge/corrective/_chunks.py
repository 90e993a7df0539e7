"""Chunks and evidence as the corrective pipeline's tests build them: the index's chunk stands
for itself as a plain frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from loopengine.knowledge.corrective import Evidence


@dataclass(frozen=True)
class Chunk:
    """The index's chunk, as the pipeline reads it."""

    source: str
    heading: str
    position: int
    text: str
    score: float = 1.0


def chunk(text: str, source: str = "kb/a.md", heading: str = "Intro", position: int = 0) -> Chunk:
    return Chunk(source, heading, position, text)


EVIDENCE = (
    Evidence(1, "kb/bm25.md", "Ranking", 0, 0.9, "BM25 ranks passages."),
    Evidence(2, "kb/index.md", "", 3, 0.5, "The index is rebuilt nightly."),
)
