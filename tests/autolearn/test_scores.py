"""Scoring chat responses (seed 003) and the routing order it gives: pure."""

from __future__ import annotations

import random

import pytest

from loopengine.autolearn._scores import (
    NEUTRAL_QUALITY,
    NodeScore,
    Sample,
    explored,
    parse_grade,
    rank,
    score_nodes,
    speed_score,
    tune,
)


@pytest.mark.parametrize(
    ("seconds", "score"), [(0.0, 10), (1.99, 10), (2.0, 7), (4.9, 7), (5.0, 4), (9.9, 4), (10, 2)]
)
def test_speed_follows_the_seed_buckets(seconds: float, score: float) -> None:
    assert speed_score(seconds) == score


def test_speed_is_judged_per_hundred_output_tokens() -> None:
    assert speed_score(12.0, output_tokens=1000) == 10  # 1.2 s per 100 tokens


def test_a_short_answer_is_judged_on_its_latency() -> None:
    assert speed_score(0.9, output_tokens=10) == 10
    assert speed_score(6.0, output_tokens=10) == 4


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("8", 8.0),
        (" 8/10 ", 8.0),
        ("7.5", 7.5),
        ('{"score": 9}', 9.0),
        ('```json\n{"score": 3, "why": "terse"}\n```', 3.0),
        ("10/10.", 10.0),
    ],
)
def test_a_grade_is_read_in_each_form_a_grader_writes(text: str, grade: float) -> None:
    assert parse_grade(text) == grade


@pytest.mark.parametrize(
    "text",
    ["", "eight", "0", "11", "-3", "8/100", '{"score": "high"}', '{"score": true}', "[8]",
     "8" * 5000, '{"score": 1e999}', "nan", "I'd say 8"],
)  # fmt: skip
def test_anything_else_is_no_grade(text: str) -> None:
    assert parse_grade(text) is None


def _samples(node: str, count: int, seconds: float = 1.0, **kw: object) -> list[Sample]:
    return [Sample(node, "code", seconds, 0, **kw) for _ in range(count)]  # type: ignore[arg-type]


def test_the_final_score_weighs_speed_quality_and_reliability() -> None:
    [scored] = score_nodes(_samples("OL1", 5, seconds=3.0, success=True, quality=8.0), 50)["code"]
    assert (scored.speed, scored.quality, scored.reliability) == (7, 8, 10)
    assert scored.score == pytest.approx(0.3 * 7 + 0.5 * 8 + 0.2 * 10)


def test_reliability_counts_the_last_twenty_responses() -> None:
    samples = _samples("OL1", 30, success=False) + _samples("OL1", 20, success=True)
    assert score_nodes(samples, 50)["code"][0].reliability == 10


def test_a_node_never_graded_has_a_neutral_quality() -> None:
    assert score_nodes(_samples("OL1", 3, success=True), 50)["code"][0].quality == NEUTRAL_QUALITY


def test_only_the_newest_samples_of_the_window_count() -> None:
    old = _samples("OL1", 10, success=True, quality=9.0)
    new = _samples("OL1", 5, success=True, quality=3.0)
    assert score_nodes(old + new, 5)["code"][0].quality == 3


def _score(node: str, score: float, samples: int = 10) -> NodeScore:
    return NodeScore(node, score, 0, 0, 0, samples)


def test_a_node_better_by_more_than_the_margin_moves_up() -> None:
    scores = [_score("M1", 8.0), _score("OL1", 6.0)]
    assert rank(["OL1", "M1"], scores, margin=0.5, min_samples=5) == ["M1", "OL1"]


def test_a_node_better_by_less_than_the_margin_stays() -> None:
    scores = [_score("M1", 6.4), _score("OL1", 6.0)]
    assert rank(["OL1", "M1"], scores, margin=0.5, min_samples=5) == ["OL1", "M1"]


def test_an_under_sampled_node_keeps_its_place() -> None:
    scores = [_score("M1", 9.0, samples=4), _score("OL1", 6.0)]
    assert rank(["OL1", "M1"], scores, margin=0.5, min_samples=5) == ["OL1", "M1"]


def test_a_scored_node_new_to_the_order_joins_it() -> None:
    scores = [_score("M2", 9.0), _score("OL1", 6.0)]
    assert rank(["OL1"], scores, margin=0.5, min_samples=5) == ["M2", "OL1"]


def test_a_scored_grader_joins_no_order_it_is_not_in() -> None:
    scores = [_score("OL1", 9.0), _score("M1", 5.0)]
    assert rank(["M1"], scores, margin=0.5, min_samples=5, grader="OL1") == ["M1"]


def test_a_grader_in_the_order_is_ranked_as_any_node() -> None:
    scores = [_score("OL1", 9.0), _score("M1", 5.0)]
    assert rank(["M1", "OL1"], scores, margin=0.5, min_samples=5, grader="OL1") == ["OL1", "M1"]


def test_stable_noise_within_the_margin_never_flips_the_order() -> None:
    rng = random.Random(3)
    order = ["OL1", "M1"]
    for _ in range(200):
        scores = [
            _score("OL1", 7 + rng.uniform(-0.2, 0.2)),
            _score("M1", 7 + rng.uniform(-0.2, 0.2)),
        ]
        order = rank(order, scores, margin=0.5, min_samples=5)
        assert order == ["OL1", "M1"]


def test_a_cycle_without_enough_samples_says_how_many() -> None:
    found = tune(_samples("OL1", 3, success=True), {}, window=50, min_samples=5, margin=0.5)
    assert (found.verdict, found.changes) == ("not enough samples (3/5)", {})


def test_a_cycle_reorders_the_category_a_node_earns() -> None:
    samples = _samples("OL1", 5, seconds=12, success=True, quality=3.0) + _samples(
        "M1", 5, success=True, quality=9.0
    )
    found = tune(samples, {"default": ["OL1", "M1"]}, window=50, min_samples=5, margin=0.5)
    assert found.changes == {"code": (["OL1", "M1"], ["M1", "OL1"])}
    assert found.verdict == "routing reordered (code: M1, OL1)"


def test_one_message_in_ten_explores_the_least_sampled_node() -> None:
    order = ["OL1", "M1", "M2"]
    picks = []
    counts = {"OL1": 0, "M1": 2, "M2": 1}
    for turn in range(3, 33):
        picked = explored(order, counts, min_samples=5, share=0.1, turn=turn) or order[0]
        counts[picked] += 1
        picks.append(picked)
    explorations = [n for n, node in enumerate(picks) if node != "OL1"]
    assert len(explorations) == 3
    assert picks[explorations[0]] == "M2"


def test_nodes_with_enough_samples_are_not_explored() -> None:
    counts = {"OL1": 9, "M1": 5}
    assert explored(["OL1", "M1"], counts, min_samples=5, share=1.0, turn=9) is None


def test_no_share_explores_nothing() -> None:
    assert explored(["OL1", "M1"], {"OL1": 9}, min_samples=5, share=0, turn=9) is None
