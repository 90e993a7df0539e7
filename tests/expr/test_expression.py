"""Compiled expressions: compile once, evaluate safely, report the column at fault."""

from __future__ import annotations

import pytest

from loopengine.errors import ExpressionError
from loopengine.expr import compile_expression, truthy


def test_comparison_reads_the_context() -> None:
    assert compile_expression("violations.count > 0").holds({"violations": {"count": 3}})


def test_missing_names_are_null_and_compare_false() -> None:
    assert compile_expression("violations.count > 0").holds({}) is False


def test_percentages_compare_as_fractions() -> None:
    assert compile_expression("error_rate > 5%").holds({"error_rate": 0.06})


def test_durations_compare_as_seconds() -> None:
    assert compile_expression("since_last_run < 6h").holds({"since_last_run": 3600})


def test_seed_alias_skips_a_recent_run() -> None:
    assert compile_expression("last_run < 6_hours_ago").holds({"since_last_run": 60})


def test_index_stays_an_index() -> None:
    assert (
        compile_expression("items[1].score").evaluate({"items": [{"score": 1}, {"score": 9}]}) == 9
    )


def test_compile_is_cached() -> None:
    assert compile_expression("a > 1") is compile_expression("a > 1")


def test_syntax_error_reports_the_column() -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression("a > > 1")
    assert caught.value.column == 4
    assert "column 5" in str(caught.value)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "a > 1 and b < 2",
            "invalid expression 'a > 1 and b < 2': unexpected 'and' at column 7; use && (JMESPath)",
        ),
        ("a or b", "invalid expression 'a or b': unexpected 'or' at column 3; use || (JMESPath)"),
        ("not a", "invalid expression 'not a': unexpected 'a' at column 5; use ! (JMESPath)"),
        (
            "x && not y",
            "invalid expression 'x && not y': unexpected 'y' at column 10; use ! (JMESPath)",
        ),
    ],
)
def test_python_boolean_words_get_the_jmespath_operator(source: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source)
    assert str(caught.value) == message


@pytest.mark.parametrize("source", ["name == 'a or b' &&", "a.or > 1 >", "x[0] and_y"])
def test_boolean_words_in_text_or_names_get_no_operator_hint(source: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source)
    assert "(JMESPath)" not in str(caught.value)


def test_unknown_function_is_a_compile_error_with_a_suggestion() -> None:
    with pytest.raises(ExpressionError, match="did you mean 'count'"):
        compile_expression("cout(items) > 1")


def test_wrong_arity_is_a_compile_error() -> None:
    with pytest.raises(ExpressionError, match=r"count\(\) takes 1 argument, 2 given"):
        compile_expression("count(a, b)")


def test_empty_expression_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="empty expression"):
        compile_expression("  ")


def test_incomplete_expression_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="incomplete"):
        compile_expression("a >")


def test_deep_nesting_is_an_expression_error() -> None:
    with pytest.raises(ExpressionError, match="too deeply"):
        compile_expression("(" * 5000 + "a" + ")" * 5000)


def test_type_errors_at_evaluation_are_expression_errors() -> None:
    with pytest.raises(ExpressionError):
        compile_expression("sum(items)").evaluate({"items": ["a", "b"]})


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), (False, False), ("", False), ([], False), ({}, False), (0, True), ("x", True)],
)
def test_truthiness_follows_jmespath(value: object, expected: bool) -> None:
    assert truthy(value) is expected


def test_expressions_compare_by_source() -> None:
    assert compile_expression("a > 1") == compile_expression("a > 1")
    assert {compile_expression("a > 1")} == {compile_expression("a > 1")}


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("input.dir", {"dir"}),
        ('input.dir.sub[0] && input."two words"', {"dir", "two words"}),
        ("length(input.tags[*].name) > 0 || @.input.limit", {"tags", "limit"}),
        ("input.[a, b]", {"a", "b"}),
        ("{n: input.n}", {"n"}),
        ("items[?input.x] | input.y", set()),
        ("sort_by(items, &input.z)", set()),
        ("input", set()),
        ("other.input.dir", set()),
    ],
)
def test_reads_names_what_an_expression_takes_from_a_root_namespace(
    source: str, names: set[str]
) -> None:
    assert compile_expression(source).reads("input") == names
