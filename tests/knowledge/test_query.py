"""An untrusted query reduced to words; rankings fused; vectors as the store keeps them."""

from __future__ import annotations

import math

import pytest

from loopengine.knowledge._query import (
    MAX_TERMS,
    Nearest,
    fuse,
    packed,
    similarity,
    terms,
    unit,
)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("How do I install it on Linux?", ("install", "linux")),
        ('"', ()),
        ("*", ()),
        ("NEAR(", ("near",)),
        ("AND OR NOT", ("and", "or", "not")),
        ('title:"x" OR body:y*', ("title", "x", "body", "y")),
        ("x_y-z^w", ("x", "y", "z", "w")),
        ("Ünïcödé 日本語 Straße", ("ünïcödé", "日本語", "straße")),
        ("repeat repeat REPEAT", ("repeat",)),
        ("x" * 65 + " kept", ("kept",)),
    ],
)
def test_a_query_is_words_never_syntax(query: str, words: tuple[str, ...]) -> None:
    assert terms(query) == words


def test_a_query_keeps_its_first_words_only() -> None:
    assert len(terms(" ".join(f"w{n}" for n in range(1000)))) == MAX_TERMS


def test_fusion_ranks_what_both_rankings_put_high_first() -> None:
    fused = fuse([[1, 2, 3], [3, 1, 4]])
    assert [item for item, _ in fused] == [1, 3, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)


def test_vectors_are_stored_at_unit_length_and_compared_by_cosine() -> None:
    stored = packed([3.0, 4.0])
    assert len(stored) == 8
    assert similarity([0.6, 0.8], stored) == pytest.approx(1.0)
    assert similarity([0.8, -0.6], stored) == pytest.approx(0.0, abs=1e-6)


def test_a_vector_of_other_dimensions_is_least_similar() -> None:
    assert similarity([1.0, 0.0, 0.0], packed([1.0, 0.0])) == -1.0


def test_the_nearest_kept_page_by_page_are_the_nearest_of_all() -> None:
    query = unit([1.0, 0.5])
    stored = [(n, packed([math.cos(n / 7), math.sin(n / 7)])) for n in range(1, 50)]
    stored += [(50, packed([math.cos(3 / 7), math.sin(3 / 7)]))]  # as near as chunk 3
    nearest = Nearest(query, 4)
    for start in range(0, len(stored), 8):
        nearest.add(stored[start : start + 8])
    best = sorted(stored, key=lambda row: (-similarity(query, row[1]), row[0]))[:4]
    assert [chunk for chunk, _ in nearest.ranking()] == [chunk for chunk, _ in best]
    assert [score for _, score in nearest.ranking()] == [similarity(query, v) for _, v in best]


def test_a_vector_of_another_model_is_never_among_the_nearest_of_the_right_one() -> None:
    nearest = Nearest(unit([1.0, 0.0]), 2)
    nearest.add([(1, packed([1.0, 0.0, 0.0])), (2, packed([0.0, 1.0])), (3, packed([1.0, 1.0]))])
    assert [chunk for chunk, _ in nearest.ranking()] == [3, 2]
