"""Which execution a name given on the command line stands for, among the ids the store found."""

from __future__ import annotations

import pytest

from loopengine.commands._report import NAMED, execution_named
from loopengine.errors import NotResumable


def test_one_id_found_is_the_execution_named() -> None:
    assert execution_named("abcd", ["abcd1234"]) == "abcd1234"


def test_nothing_found_says_where_to_look() -> None:
    with pytest.raises(NotResumable) as raised:
        execution_named("abcd", [])
    assert str(raised.value) == "no execution 'abcd' (see `loopengine history`)"


def test_several_found_are_listed_and_more_of_the_id_asked_for() -> None:
    with pytest.raises(NotResumable) as raised:
        execution_named("abcd", ["abcd1", "abcd2"])
    assert str(raised.value) == "'abcd' names several executions (abcd1, abcd2): give more of it"


def test_more_found_than_are_listed_end_the_list_with_an_ellipsis() -> None:
    found = [f"abcd{n}" for n in range(NAMED)]
    with pytest.raises(NotResumable, match=r"\(abcd0, abcd1, abcd2, abcd3, abcd4, …\)"):
        execution_named("abcd", found)
