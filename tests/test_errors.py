"""One error tree rooted at LoopEngineError; foreign errors are translated where they enter."""

from __future__ import annotations

import pytest

from loopengine import errors
from loopengine.contract import parse_yaml
from loopengine.expr import compile_expression


@pytest.mark.parametrize(
    "error",
    [
        errors.ContractError,
        errors.ExpressionError,
        errors.TriggerError,
        errors.SkillError,
        errors.LLMError,
        errors.StorageError,
        errors.BudgetExceeded,
    ],
)
def test_every_error_derives_from_loopengine_error(error: type[Exception]) -> None:
    assert issubclass(error, errors.LoopEngineError)


def test_skill_error_carries_retryability() -> None:
    error = errors.SkillError("rate limited", retryable=True, retry_after=2.0)
    assert (error.retryable, error.retry_after) == (True, 2.0)


def test_skill_error_is_not_retryable_by_default() -> None:
    assert errors.SkillError("boom").retryable is False


def test_yaml_syntax_error_becomes_contract_error_with_position() -> None:
    with pytest.raises(errors.ContractError) as caught:
        parse_yaml("a: 1\n b: 2\n", "x.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.file, diagnostic.line) == ("x.yaml", 2)


def test_jmespath_parse_error_becomes_expression_error() -> None:
    with pytest.raises(errors.ExpressionError):
        compile_expression("a ||| b")


def test_jmespath_type_error_at_evaluation_becomes_expression_error() -> None:
    with pytest.raises(errors.ExpressionError):
        compile_expression("abs(name)").evaluate({"name": "text"})
