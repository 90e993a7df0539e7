"""Reading what the models reply: a grade read strictly as 0–1 (anything else is 0), an answer's
citations resolved to the evidence or failing it, a rewrite read back as one bounded line."""

from __future__ import annotations

import pytest

from loopengine.knowledge.corrective import (
    MAX_ANSWER,
    MAX_QUERY,
    MAX_READ,
    parse_citations,
    read_answer,
    read_grade,
    read_rewrite,
)
from tests.knowledge.corrective._chunks import EVIDENCE

# read_grade


@pytest.mark.parametrize(
    ("reply", "grade"),
    [("0.8", 0.8), ("1", 1.0), ("0", 0.0), (" 0.25\n", 0.25), (".5", 0.5), ("1.000", 1.0)],
)
def test_a_bare_number_from_0_to_1_is_the_grade(reply: str, grade: float) -> None:
    assert read_grade(reply) == grade


@pytest.mark.parametrize("reply", ['{"score": 0.75}', '{ "score" : 0.75 }'])
def test_a_json_score_is_the_grade(reply: str) -> None:
    assert read_grade(reply) == 0.75


def test_a_think_block_before_the_grade_is_ignored() -> None:
    assert read_grade("<think>It says 0.1 maybe… no.</think>\n0.9") == 0.9


def test_an_unclosed_think_block_leaves_no_grade() -> None:
    assert read_grade("<think>the grade is 0.9") == 0.0


@pytest.mark.parametrize(
    "reply",
    [
        "1.5",
        "-0.2",
        "NaN",
        "nan",
        "inf",
        "1e-1",
        "0x1",
        "١",
        "8/10",
        "85%",
        "[0.9]",
        "",
        '{"score": NaN}',
        '{"score": 1e999}',
        '{"score": true}',
        '{"score": "0.9"}',
        '{"score": 0.9, "reason": "on topic"}',
        '```json\n{"score": 0.9}\n```',
        "0.9 (the passage is on topic)",
        "Relevance: 0.9",
        "0.9\n0.9",
        "9" * 10_000,
        "[" * 20_000,
        "<think>" + "x" * MAX_READ + "</think>0.9",
    ],
)
def test_anything_but_a_grade_reads_as_zero(reply: str) -> None:
    assert read_grade(reply) == 0.0


# citations


def test_citations_are_read_alone_in_lists_and_side_by_side() -> None:
    assert parse_citations("BM25 ranks [1, 3]; it saturates [1][2].") == (1, 3, 2)


def test_an_index_after_a_word_is_not_a_citation() -> None:
    assert parse_citations("Use items[0] or d[1] as shown [2].") == (2,)


def test_an_answer_s_citations_resolve_to_their_source_and_heading() -> None:
    checked = read_answer("It ranks passages [1] and is rebuilt nightly [2].", EVIDENCE)
    assert checked.problem is None
    assert [c.ref for c in checked.citations] == ["kb/bm25.md#Ranking", "kb/index.md"]


def test_a_citation_to_no_evidence_fails_the_answer() -> None:
    checked = read_answer("It ranks passages [1][3].", EVIDENCE)
    assert checked.problem == "cites [3], not among the evidence [1]–[2]"


def test_an_answer_without_citation_fails() -> None:
    assert read_answer("BM25 ranks passages.", EVIDENCE).problem == (
        "cites no evidence; each claim needs its [n]"
    )


def test_an_answer_s_think_block_is_dropped() -> None:
    checked = read_answer("<think>maybe [7]</think>It ranks passages [1].", EVIDENCE)
    assert checked.text == "It ranks passages [1]."


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "is empty"),
        ("<think>never closed [1]", "is empty"),
        ("x [1] " * MAX_ANSWER, f"is longer than {MAX_ANSWER} characters"),
        ("[1]" * MAX_READ, f"is longer than {MAX_ANSWER} characters"),
    ],
)
def test_an_empty_or_oversized_answer_fails(reply: str, problem: str) -> None:
    assert read_answer(reply, EVIDENCE).problem == problem


# read_rewrite


def test_the_rewrite_is_its_first_line_without_think_label_or_quotes() -> None:
    reply = '<think>try synonyms</think>\n\n  Query: "okapi bm25 ranking"\nBecause…'
    assert read_rewrite(reply) == "okapi bm25 ranking"


def test_a_rewrite_loses_its_control_characters() -> None:
    assert read_rewrite("bm25\x1b[31m\x00 ranking") == "bm25 [31m ranking"


def test_a_long_rewrite_is_cut_at_a_word() -> None:
    query = read_rewrite("bm25 " * 100)
    assert query is not None
    assert len(query) <= MAX_QUERY
    assert query.split(" ")[-1] == "bm25"


@pytest.mark.parametrize("reply", ["", "  \n", '""', "<think>never closed", "x" * (MAX_READ + 1)])
def test_an_empty_or_oversized_rewrite_is_none(reply: str) -> None:
    assert read_rewrite(reply) is None
