"""Property: any string compiles or raises ExpressionError; evaluation raises nothing else."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopengine.errors import ExpressionError
from loopengine.expr import compile_expression, compile_template

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "x", "items", "count"]), inner, max_size=4)
    ),
    max_leaves=20,
)
PIECES = st.sampled_from(
    [
        *"abx0129 .[]{}()?*@&|!<>=,:'`\"-%hmsd_$\\",
        "count(",
        "avg(",
        "now()",
        "age(",
        "sort_by(",
        "&",
        "to_number(",
        "max_by(",
        "items",
        "[?",
        "6_hours_ago",
        "last_run",
        "${",
    ]
)
EXPRESSIONS = st.lists(PIECES, max_size=24).map("".join) | st.text(max_size=40)


def _evaluate_or_expression_error(source: str, data: Any) -> None:
    try:
        expression = compile_expression(source)
    except ExpressionError:
        return
    with contextlib.suppress(ExpressionError):
        expression.evaluate(data)


@settings(max_examples=3000, deadline=None)
@given(EXPRESSIONS, JSON)
def test_compiling_and_evaluating_raise_only_expression_errors(source: str, data: Any) -> None:
    _evaluate_or_expression_error(source, data)


@settings(max_examples=1000, deadline=None)
@given(EXPRESSIONS, JSON)
def test_templates_raise_only_expression_errors(source: str, data: Any) -> None:
    try:
        template = compile_template(f"x ${{{source}}}")
    except ExpressionError:
        return
    with contextlib.suppress(ExpressionError):
        template.render(data, {})
