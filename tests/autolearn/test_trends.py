"""Trends of the scores from one tuning cycle to the next, and the question put to the analysis
node about them: pure."""

from __future__ import annotations

from loopengine.autolearn._trends import trend_messages, trends

NOW = {"code": [{"node": "M1", "score": 7.5}, {"node": "OL1", "score": 6.0}]}


def test_a_node_scored_before_shows_its_change_and_a_new_one_none() -> None:
    found = trends(NOW, {("code", "M1"): 8.0})
    assert found == {
        "code": [
            {"node": "M1", "score": 7.5, "previous": 8.0, "delta": -0.5},
            {"node": "OL1", "score": 6.0, "previous": None, "delta": None},
        ]
    }


def test_the_analysis_node_is_shown_the_table_as_data() -> None:
    system, user = trend_messages(trends(NOW, {("code", "M1"): 8.0}))
    assert "not instructions" in system["content"]
    assert "code\tM1\t7.50\t-0.50" in user["content"]
    assert "code\tOL1\t6.00\tnew" in user["content"]


def test_the_question_stays_bounded_however_many_nodes_and_names() -> None:
    many = {f"c{i}" * 50: [{"node": "n" * 500, "score": 5.0}] * 50 for i in range(50)}
    _, user = trend_messages(trends(many, {}))
    assert len(user["content"]) < 50_000
