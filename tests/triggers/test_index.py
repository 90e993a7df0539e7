"""The pattern index: every pattern that ``matches`` a name, found at once, in insertion order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopengine.triggers import PatternIndex, matches

PATTERN_SEGMENTS = st.sampled_from(["a", "b", "c", "*", "**", ""])
NAME_SEGMENTS = st.sampled_from(["a", "b", "c", "*", "**", ""])


def joined(segments: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(segments, min_size=1, max_size=6).map(".".join)


@given(st.lists(joined(PATTERN_SEGMENTS), max_size=8), joined(NAME_SEGMENTS))
def test_agrees_with_matches_on_every_pattern(patterns: list[str], name: str) -> None:
    index = PatternIndex((pattern, i) for i, pattern in enumerate(patterns))
    expected = tuple(i for i, pattern in enumerate(patterns) if matches(pattern, name))
    assert index.match(name) == expected


def test_values_come_in_insertion_order() -> None:
    index = PatternIndex([("seo.**", 1), ("**", 2), ("seo.*.done", 3), ("seo.audit.done", 4)])
    assert index.match("seo.audit.done") == (1, 2, 3, 4)


def test_a_pattern_reached_along_several_paths_is_given_once() -> None:
    index = PatternIndex([("**.**.done", "x")])
    assert index.match("a.done.done.done") == ("x",)


def test_the_same_pattern_twice_gives_both_values() -> None:
    index = PatternIndex([("seo.*", "first"), ("seo.*", "second")])
    assert index.match("seo.page") == ("first", "second")


def test_no_matching_pattern_gives_nothing() -> None:
    index = PatternIndex([("seo.*", 1), ("**.failed", 2)])
    assert index.match("billing.invoice.paid") == ()


def test_an_empty_index_matches_nothing() -> None:
    assert PatternIndex[int]([]).match("seo.page") == ()


def test_len_counts_the_entries() -> None:
    assert len(PatternIndex([("a.*", 1), ("a.*", 2), ("**", 3)])) == 3


def test_a_remembered_name_gives_the_same_values() -> None:
    index = PatternIndex([("seo.*", 1)])
    assert index.match("seo.page") == index.match("seo.page") == (1,)


def test_matching_stays_right_while_the_memo_is_emptied() -> None:
    index = PatternIndex([("n.*", "any"), ("n.7", "seven")], memo_size=2)
    found = [index.match(f"n.{i % 9}") for i in range(30)]
    assert found == [("any", "seven") if i % 9 == 7 else ("any",) for i in range(30)]


def test_the_memo_never_holds_more_than_its_size() -> None:
    index = PatternIndex([("**", 1)], memo_size=100)
    for i in range(1_000):
        index.match(f"user.event.{i}")
    assert len(index._memo) <= 100


def test_a_very_long_name_is_matched_but_not_remembered() -> None:
    index = PatternIndex([("**.done", 1), ("a.*", 2)])
    name = ".".join(["a"] * 200_000 + ["done"])
    assert index.match(name) == (1,)
    assert name not in index._memo
