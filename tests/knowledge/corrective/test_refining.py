"""Knowledge refinement: the graded chunks cut into strips and kept as numbered evidence, the
strips relevant to the queries first, in document order, within the budget."""

from __future__ import annotations

from loopengine.knowledge.corrective import CragSettings, Graded, refine
from tests.knowledge.corrective._chunks import chunk


def graded(grade: float, text: str, position: int = 0, query: str = "q") -> Graded:
    return Graded(chunk(text, position=position), grade, query)


SETTINGS = CragSettings()

RELEVANT = "BM25 ranks passages by term frequency. The weather was fine that day."


def test_chunks_graded_at_or_below_lower_are_dropped() -> None:
    assert refine([graded(0.3, RELEVANT)], ["what does bm25 rank"], SETTINGS) == ()


def test_refinement_keeps_the_strips_about_the_question() -> None:
    text = "The weather was fine that day. BM25 ranks passages by term frequency."
    settings = CragSettings(budget_chars=200)
    other = graded(0.5, "Lunch was served at noon. Nothing else happened here at all.", 1)
    evidence = refine([graded(0.9, text), other], ["how does bm25 rank passages"], settings)
    assert evidence[0].text == "BM25 ranks passages by term frequency."


def test_kept_strips_are_in_document_order_with_a_mark_where_strips_were_left_out() -> None:
    text = "BM25 is a ranking function. The sky is blue. It weighs term frequency."
    (evidence,) = refine([graded(0.9, text)], ["bm25 term frequency ranking"], SETTINGS)
    assert evidence.text == "BM25 is a ranking function. … It weighs term frequency."


def test_a_relevant_chunk_sharing_no_word_with_the_question_keeps_its_best_strip() -> None:
    (evidence,) = refine([graded(0.9, "Okapi weighting. Saturation.")], ["bm25?"], SETTINGS)
    assert evidence.text == "Okapi weighting."


def test_the_rewritten_queries_count_in_the_relevance_of_a_strip() -> None:
    text = "Nothing here. Okapi weighting saturates."
    queries = ["what is bm25", "okapi saturation"]
    (evidence,) = refine([graded(0.9, text)], queries, CragSettings(budget_chars=200))
    assert evidence.text == "Okapi weighting saturates."


def test_the_evidence_is_numbered_from_1_best_graded_first() -> None:
    found = [graded(0.5, "Second best.", 1), graded(0.9, "Best.", 2)]
    assert [(e.n, e.position) for e in refine(found, ["best"], SETTINGS)] == [(1, 2), (2, 1)]


def test_a_chunk_found_twice_is_evidence_once_with_its_best_grade() -> None:
    found = [graded(0.5, RELEVANT, query="a"), graded(0.9, RELEVANT, query="b")]
    assert [e.grade for e in refine(found, ["bm25"], SETTINGS)] == [0.9]


def test_at_most_max_evidence_chunks_are_kept() -> None:
    found = [graded(0.9, RELEVANT, position=i) for i in range(20)]
    assert len(refine(found, ["bm25"], CragSettings(max_evidence=3))) == 3


def test_the_refined_evidence_fits_its_budget_whatever_the_chunks() -> None:
    huge = "BM25 ranks passages. " * 500_000 + "x" * 1_000_000
    found = [graded(0.9, huge, position=i) for i in range(8)]
    evidence = refine(found, ["bm25 passages"], CragSettings(budget_chars=1_000))
    assert sum(len(e.text) + 1 for e in evidence) <= 1_000


def test_a_sentence_longer_than_a_strip_is_cut_into_windows_at_words() -> None:
    text = " ".join(["filler"] * 100 + ["bm25"] + ["filler"] * 100)
    (evidence,) = refine([graded(0.9, text)], ["bm25"], CragSettings(budget_chars=500))
    assert "bm25" in evidence.text
    assert len(evidence.text) <= 400
    assert all(word == "filler" or word == "bm25" for word in evidence.text.split())


def test_a_chunk_that_is_one_run_of_spaces_holds_no_strip() -> None:
    assert refine([graded(0.9, " " * 20_000)], ["bm25"], SETTINGS) == ()


def test_a_run_of_spaces_inside_a_sentence_is_cut_out_of_its_windows() -> None:
    text = "Reset the hub" + " " * 19_000 + "then pair the sensors."
    (evidence,) = refine([graded(0.9, text)], ["pair the sensors"], SETTINGS)
    assert evidence.text == "Reset the hub then pair the sensors."
