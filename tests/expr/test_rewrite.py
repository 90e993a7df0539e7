"""The sugar on top of JMESPath, translated before parsing."""

from __future__ import annotations

import pytest

from loopengine.errors import ExpressionError
from loopengine.expr import rewrite


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("violations.count > 0", "violations.count > `0`"),
        ("items[0].score >= 7.5", "items[0].score >= `7.5`"),
        ("items[-1].score < -2", "items[-1].score < `-2`"),
        ("items[1:3]", "items[1:3]"),
        ("items[::2]", "items[::2]"),
        ("items[?score > 5]", "items[?score > `5`]"),
        ("error_rate > 5%", "error_rate > `0.05`"),
        ("since_last_run < 6h", "since_last_run < `21600`"),
        ("age(trigger.at) > 90s", "age(trigger.at) > `90`"),
        ("latency < 250ms", "latency < `0.25`"),
        ("idle > 2d", "idle > `172800`"),
        ("window == 5m", "window == `300`"),
        ("big > 1_000", "big > `1000`"),
        ("x > 1e3", "x > `1000`"),
    ],
)
def test_sugar_becomes_standard_jmespath(source: str, expected: str) -> None:
    assert rewrite(source).text == expected


def test_seed_last_run_alias_means_since_last_run() -> None:
    assert rewrite("last_run < 6_hours_ago").text == "since_last_run < `21600`"


def test_last_run_alias_accepts_singular_units() -> None:
    assert rewrite("last_run < 1_hour_ago").text == "since_last_run < `3600`"


def test_ago_outside_the_alias_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="only understood as"):
        rewrite("deployed_at < 6_hours_ago")


@pytest.mark.parametrize("quoted", ["'5%'", '"5h"', "`10`"])
def test_quoted_text_is_left_alone(quoted: str) -> None:
    assert rewrite(f"name == {quoted}").text == f"name == {quoted}"


def test_digits_inside_identifiers_stay() -> None:
    assert rewrite("node2.m1 > 1").text == "node2.m1 > `1`"


def test_source_column_maps_back_through_literals() -> None:
    rewritten = rewrite("a > 5% && b")
    assert rewritten.source_column(rewritten.text.index("&&")) == 7


@pytest.mark.parametrize("word", ["true", "false", "null"])
def test_bare_keywords_are_literals(word: str) -> None:
    assert rewrite(f"flag == {word}").text == f"flag == `{word}`"


def test_keywords_after_a_dot_stay_field_names() -> None:
    assert rewrite("flags.true").text == "flags.true"
