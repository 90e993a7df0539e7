"""now(), age(), count(), matches(), lines() and the JMESPath built-ins."""

from __future__ import annotations

import time

import pytest

from loopengine.errors import ExpressionError
from loopengine.expr import compile_expression


def test_now_is_the_epoch_in_seconds() -> None:
    assert abs(compile_expression("now()").evaluate({}) - time.time()) < 5


def test_age_of_an_iso_timestamp() -> None:
    data = {"at": "2020-01-01T00:00:00Z"}
    assert compile_expression("age(at) > 90d").holds(data)


def test_age_of_an_epoch_number() -> None:
    data = {"at": time.time() - 30}
    assert compile_expression("age(at) < 1m").holds(data)


def test_age_of_a_naive_timestamp_is_utc() -> None:
    naive = compile_expression("age(a)").evaluate({"a": "2020-01-01T00:00:00"})
    aware = compile_expression("age(a)").evaluate({"a": "2020-01-01T00:00:00+00:00"})
    assert abs(naive - aware) < 1


def test_age_of_null_is_null() -> None:
    assert compile_expression("age(missing)").evaluate({}) is None


def test_age_of_garbage_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError, match="ISO 8601"):
        compile_expression("age(a)").evaluate({"a": "yesterday"})


@pytest.mark.parametrize(("value", "count"), [([1, 2, 3], 3), ({"a": 1}, 1), ("abc", 3), (None, 0)])
def test_count(value: object, count: int) -> None:
    assert compile_expression("count(v)").evaluate({"v": value}) == count


def test_matches_is_a_case_sensitive_glob() -> None:
    assert compile_expression("matches(name, 'seo.*')").holds({"name": "seo.page"})
    assert not compile_expression("matches(name, 'seo.*')").holds({"name": "SEO.page"})


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a.iso\nb c.iso\n", ["a.iso", "b c.iso"]),
        ("a\r\n\n  \nb", ["a", "b"]),
        ("form\x0cfeed.txt\nline\u2028sep.txt\n", ["form\x0cfeed.txt", "line\u2028sep.txt"]),
        ("", []),
        (None, []),
    ],
)
def test_lines_are_the_lines_that_hold_something(text: str | None, found: list[str]) -> None:
    assert compile_expression("lines(out)").evaluate({"out": text}) == found


def test_lines_of_a_number_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError):
        compile_expression("lines(out)").evaluate({"out": 3})


@pytest.mark.parametrize(("function", "expected"), [("avg", 2), ("sum", 6), ("min", 1), ("max", 3)])
def test_aggregations(function: str, expected: float) -> None:
    assert compile_expression(f"{function}(v)").evaluate({"v": [1, 2, 3]}) == expected
