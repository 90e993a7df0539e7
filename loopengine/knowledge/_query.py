"""What a query is made of, and how rankings meet: the words of an untrusted query (never
query syntax), reciprocal rank fusion, and vectors as the store keeps them, and the nearest of
them."""

from __future__ import annotations

import heapq
import math
import operator
import re
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "RRF_K",
    "Nearest",
    "fuse",
    "packed",
    "similarity",
    "terms",
    "unit",
]

MAX_QUERY_CHARS = 2_000
"""Longest query searched."""
MAX_TERMS = 32
"""Most distinct words of a query searched for (the first ones)."""
_MAX_TERM = 64
"""A longer "word" (a hash, base64) is left out: nothing would match it."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al. 2009): a rank ``r`` counts ``1/(60 + r)``."""
_BIG_ENDIAN = sys.byteorder == "big"
"""Whether a stored vector's bytes (little-endian) are swapped to be read as floats here."""
_WORD = re.compile(r"[^\W_]+")
_STOP_WORDS = frozenset(
    {
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
        "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
        "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
        "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
        "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
        "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
        "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
        "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
        "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
        "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
        "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
        "yourselves",
    }
)  # fmt: skip
"""English words too common to rank by (left out of a query that has other words)."""


def terms(query: str) -> tuple[str, ...]:
    """The words of ``query`` to search for, lower-cased, each once, in order: letters and
    digits only, so no character of it is query syntax; common English words are left out
    unless the query has nothing else. Empty for a query without words."""
    words = dict.fromkeys(word for word in _WORD.findall(query.lower()) if len(word) <= _MAX_TERM)
    kept = [word for word in words if word not in _STOP_WORDS] or list(words)
    return tuple(kept[:MAX_TERMS])


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Ids ranked by reciprocal rank fusion of ``rankings`` (each best first): the sum of
    ``1/(k + rank)`` over the rankings an id is in, best first (ties by first appearance)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda entry: -entry[1])


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (zeros stay zeros)."""
    norm = math.sqrt(math.fsum(value * value for value in vector))
    return [value / norm for value in vector] if norm else [0.0] * len(vector)


def packed(vector: Sequence[float]) -> bytes:
    """``vector`` scaled to unit length, as the store keeps it (little-endian float32)."""
    return struct.pack(f"<{len(vector)}f", *unit(vector))


def similarity(query: Sequence[float], stored: bytes) -> float:
    """The cosine of ``query`` (unit length) and a stored vector; -1 when their dimensions
    differ (a vector of another model)."""
    if len(stored) != 4 * len(query):
        return -1.0
    values = array("f", stored)
    if _BIG_ENDIAN:
        values.byteswap()
    cosine: float = sum(map(operator.mul, query, values))
    return cosine


class Nearest:
    """The ``limit`` stored vectors most similar to ``query`` among those ``add``ed a page at a
    time, kept in a heap: memory holds a page and ``limit`` entries however many are scored."""

    __slots__ = ("_best", "_limit", "_query")

    def __init__(self, query: Sequence[float], limit: int) -> None:
        self._query = list(query)
        self._limit = limit
        self._best: list[tuple[float, int]] = []

    def add(self, page: Iterable[tuple[int, bytes]]) -> None:
        """Score ``page``'s vectors (chunk id, stored vector)."""
        best, limit, query = self._best, self._limit, self._query
        for chunk, stored in page:
            entry = (similarity(query, stored), -chunk)
            if len(best) < limit:
                heapq.heappush(best, entry)
            elif entry > best[0]:
                heapq.heapreplace(best, entry)

    def ranking(self) -> list[tuple[int, float]]:
        """The best chunks found, by id with their similarity, best first (ties: lower id)."""
        return [(-chunk, score) for score, chunk in sorted(self._best, reverse=True)]
