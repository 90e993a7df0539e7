"""Simple messages take one node; long, multi-part, analytical or tool-needing ones the chain."""

from __future__ import annotations

import pytest

from loopengine.llm import classify_complexity


@pytest.mark.parametrize("message", ["Bonjour !", "What is the capital of France?", "merci"])
def test_short_plain_messages_are_simple(message: str) -> None:
    assert classify_complexity(message).mode == "simple"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("Analyse les ventes du mois", "keyword 'analyse'"),
        ("Compare Postgres and SQLite", "keyword 'compare'"),
        ("Explique en détail le cache", "keyword 'explique'"),
        ("Cherche et explique pourquoi le build casse", "keyword 'explique'"),
        ("Lis le fichier facts.txt", "needs tools ('fichier')"),
        ("run query_db on orders", "needs tools ('query_db')"),
    ],
)
def test_keywords_and_tools_make_it_reflexive(message: str, reason: str) -> None:
    result = classify_complexity(message)
    assert result.mode == "reflexive"
    assert reason in result.reasons


def test_the_routed_category_counts() -> None:
    assert classify_complexity("fix it", "code").reasons == ("category 'code'",)


def test_long_messages_are_reflexive() -> None:
    assert classify_complexity("word " * 60).mode == "reflexive"


def test_several_parts_are_reflexive() -> None:
    assert "several parts" in classify_complexity("Do this?\nAnd that?").reasons


def test_the_simple_category_keeps_a_plain_question_simple() -> None:
    assert classify_complexity("Quelle heure est-il ?", "simple").mode == "simple"
