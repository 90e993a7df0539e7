"""Scores of chat responses and the routing order they give (seed 003); pure.

A response scores ``0.3 × speed + 0.5 × quality + 0.2 × reliability`` on 0–10:

- speed: the seed's buckets (< 2 s = 10, 2–5 s = 7, 5–10 s = 4, > 10 s = 2) applied to the time
  the node takes per ``REFERENCE_TOKENS`` output tokens, so a long answer is not slow for being
  long (a shorter answer, or one that reports no tokens, is judged on its latency), over the
  responses that succeeded (a node that never did is in the slowest bucket);
- quality: the grader's 1–10; an ungraded response takes the node's mean grade, and a node never
  graded the neutral ``NEUTRAL_QUALITY``;
- reliability: successes over the node's last ``RELIABILITY_WINDOW`` responses, on 0–10.

Scores are per node × category over a sliding window of the newest samples; a node with fewer
than ``min_samples`` is not ranked on its score (it is explored instead). The routing order
changes only when a node beats the one above it by more than ``margin`` (hysteresis: noise does
not flip it back and forth).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import TYPE_CHECKING, Any

from loopengine._json import JSONObject

if TYPE_CHECKING:
    from loopengine.store.autolearn import ChatSample

__all__ = [
    "NEUTRAL_QUALITY",
    "REFERENCE_TOKENS",
    "RELIABILITY_WINDOW",
    "WEIGHTS",
    "NodeScore",
    "Sample",
    "Tuning",
    "explored",
    "parse_grade",
    "rank",
    "score_nodes",
    "speed_score",
    "tune",
]

WEIGHTS = (0.3, 0.5, 0.2)
"""Of speed, quality and reliability."""
REFERENCE_TOKENS = 100
"""Speed is judged on the time per this many output tokens."""
RELIABILITY_WINDOW = 20
NEUTRAL_QUALITY = 5.0
_SPEED = ((2.0, 10.0), (5.0, 7.0), (10.0, 4.0))
_SLOWEST = 2.0
_GRADE = re.compile(r"^\s*(\d{1,2}(?:\.\d+)?)\s*(?:/\s*10\s*)?[.!]?\s*$")
_MAX_GRADE_CHARS = 2000
"""A grader's answer longer than this is not read (a model's text is untrusted)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One chat response as scoring sees it."""

    node: str
    category: str
    seconds: float
    output_tokens: int
    success: bool
    quality: float | None = None
    """The grader's 1–10, or None when ungraded (grader down, timed out, unreadable)."""

    @classmethod
    def of(cls, row: ChatSample) -> Sample:
        """The sample a stored response holds."""
        return cls(row.node, row.category, row.seconds, row.output_tokens, row.success, row.quality)


@dataclass(frozen=True, slots=True)
class NodeScore:
    """A node's standing in one category."""

    node: str
    score: float
    speed: float
    quality: float
    reliability: float
    samples: int

    def as_dict(self) -> JSONObject:
        return {
            "node": self.node,
            "score": round(self.score, 3),
            "speed": round(self.speed, 3),
            "quality": round(self.quality, 3),
            "reliability": round(self.reliability, 3),
            "samples": self.samples,
        }


def speed_score(seconds: float, output_tokens: int = 0) -> float:
    """The seed's speed bucket of a response (see the module's docstring)."""
    paced = seconds * REFERENCE_TOKENS / max(output_tokens, REFERENCE_TOKENS)
    return next((score for bound, score in _SPEED if paced < bound), _SLOWEST)


def parse_grade(text: str) -> float | None:
    """The grader's grade in ``8``, ``8/10``, ``8.5`` or JSON ``{"score": 8}``; None unless it is
    a number from 1 to 10."""
    if len(text) > _MAX_GRADE_CHARS:
        return None
    found = _GRADE.match(text)
    value: Any = found.group(1) if found else None
    if value is None:
        try:
            document = json.loads(text.strip().removeprefix("```json").strip("`\n "))
        except ValueError:
            return None
        value = document.get("score") if isinstance(document, dict) else None
    try:
        grade = float(value)
    except (TypeError, ValueError):
        return None
    return grade if 1.0 <= grade <= 10.0 and not isinstance(value, bool) else None


def _node_score(node: str, window: Sequence[Sample]) -> NodeScore:
    answered = [speed_score(s.seconds, s.output_tokens) for s in window if s.success]
    speed = fmean(answered) if answered else _SLOWEST
    graded = [s.quality for s in window if s.quality is not None]
    quality = fmean(graded) if graded else NEUTRAL_QUALITY
    recent = window[-RELIABILITY_WINDOW:]
    reliability = 10.0 * sum(s.success for s in recent) / len(recent)
    total = WEIGHTS[0] * speed + WEIGHTS[1] * quality + WEIGHTS[2] * reliability
    return NodeScore(node, total, speed, quality, reliability, len(window))


def score_nodes(samples: Iterable[Sample], window: int) -> dict[str, list[NodeScore]]:
    """Each category's nodes, best first, scored over their newest ``window`` samples
    (``samples`` oldest first)."""
    grouped: dict[tuple[str, str], list[Sample]] = {}
    for sample in samples:
        grouped.setdefault((sample.category, sample.node), []).append(sample)
    scored: dict[str, list[NodeScore]] = {}
    for (category, node), found in grouped.items():
        scored.setdefault(category, []).append(_node_score(node, found[-window:]))
    return {
        category: sorted(nodes, key=lambda n: (-n.score, n.node))
        for category, nodes in sorted(scored.items())
    }


def rank(
    current: Sequence[str],
    scores: Sequence[NodeScore],
    *,
    margin: float,
    min_samples: int,
    grader: str | None = None,
) -> list[str]:
    """The new routing order of a category: ``current`` with each node moved above those it
    beats by more than ``margin``; nodes with fewer than ``min_samples`` keep their place, and
    scored nodes new to the order join after it, the ``grader`` aside (it is only in an order
    the config gives it)."""
    known: Mapping[str, NodeScore] = {s.node: s for s in scores if s.samples >= min_samples}
    joining = [s.node for s in scores if s.node in known and s.node not in current]
    order = [*current, *(node for node in joining if node != grader)]
    moved = True
    while moved:
        moved = False
        for index in range(1, len(order)):
            above, below = known.get(order[index - 1]), known.get(order[index])
            if above is not None and below is not None and below.score > above.score + margin:
                order[index - 1], order[index] = order[index], order[index - 1]
                moved = True
    return order


@dataclass(frozen=True, slots=True)
class Tuning:
    """What a tuning cycle found: each category's scores, the orders to change, and one line
    saying so (``not enough samples (3/5)`` when no node has enough)."""

    scores: dict[str, list[NodeScore]]
    changes: dict[str, tuple[list[str], list[str]]]
    """Category → (current order, new order), for the orders that change."""
    verdict: str


def tune(
    samples: Sequence[Sample],
    orders: Mapping[str, Sequence[str]],
    *,
    window: int,
    min_samples: int,
    margin: float,
    grader: str | None = None,
) -> Tuning:
    """Score ``samples`` (oldest first) and rank each category's nodes against its current
    order (``orders``: the tuned one, else the config's, else none); the ``grader`` joins none
    it is not in."""
    scores = score_nodes(samples, window)
    ranked = max((s.samples for nodes in scores.values() for s in nodes), default=0)
    if ranked < min_samples:
        verdict = f"not enough samples ({ranked}/{min_samples})"
        return Tuning(scores, {}, verdict)
    changes = {}
    for category, nodes in scores.items():
        current = list(orders.get(category) or orders.get("default") or [])
        new = rank(current, nodes, margin=margin, min_samples=min_samples, grader=grader)
        if new != current:
            changes[category] = (current, new)
    if not changes:
        return Tuning(
            scores, {}, f"routing unchanged: no node beats the one above it by more than {margin:g}"
        )
    moved = "; ".join(f"{c}: {', '.join(new)}" for c, (_, new) in sorted(changes.items()))
    return Tuning(scores, changes, f"routing reordered ({moved})")


def explored(
    order: Sequence[str],
    counts: Mapping[str, int],
    *,
    min_samples: int,
    share: float,
    turn: int,
) -> str | None:
    """The node of ``order`` this message explores, or None. The message whose ``turn`` (a
    number that grows by one per response recorded, so a run is reproducible) falls on each
    ``1 / share``-th explores the node with the fewest samples among those under
    ``min_samples`` (the first in ``order`` on a tie); none when every node has enough."""
    if share <= 0:
        return None
    period = max(1, round(1 / share))
    if turn % period != period - 1:
        return None
    under = [node for node in order if counts.get(node, 0) < min_samples]
    return min(under, key=lambda node: counts.get(node, 0)) if under else None
