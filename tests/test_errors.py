"""One error tree rooted at LoopEngineError; foreign errors are translated where they enter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopengine import errors
from loopengine._secrets import remember
from loopengine.contract import parse_yaml
from loopengine.engine import translated
from loopengine.expr import compile_expression
from loopengine.testing import memory_store


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


def test_the_docstring_draws_every_error_of_the_tree() -> None:
    doc = errors.__doc__ or ""
    drawn = {name for name in errors.__all__ if f"── {name}" in doc or f"    {name} " in doc}
    assert drawn == set(errors.__all__)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.LoopEngineError), name


@pytest.mark.anyio
async def test_a_database_error_becomes_storage_error() -> None:
    async with memory_store() as store:
        with pytest.raises(errors.StorageError, match="no such table"):
            await store.read(lambda c: c.exec_driver_sql("SELECT * FROM nowhere").all())


class _Response:
    status_code = 503


class _HTTPStatusError(Exception):
    response = _Response()


@pytest.mark.parametrize(
    ("raised", "retryable"),
    [
        (ConnectionResetError("reset by peer"), True),
        (TimeoutError("read timed out"), True),
        (_HTTPStatusError("service unavailable"), True),
        (ValueError("bad value"), False),
        (KeyError("missing"), False),
    ],
)
def test_a_skills_own_exception_becomes_skill_error(raised: Exception, retryable: bool) -> None:
    seen = translated(raised, "fetch")
    assert isinstance(seen, errors.SkillError)
    assert seen.retryable is retryable
    assert str(seen).startswith(f"skill 'fetch' failed: {type(raised).__name__}")


def test_a_translated_message_masks_secrets() -> None:
    remember("s3cr3t")
    seen = translated(ValueError("token s3cr3t refused"), "fetch")
    assert "s3cr3t" not in str(seen)
    assert "***" in str(seen)


def _raise_here() -> None:
    raise KeyError("page")


def test_a_translated_message_says_where_the_skill_raised() -> None:
    try:
        _raise_here()
    except KeyError as exc:
        seen = translated(exc, "fetch")
    assert str(seen).startswith("skill 'fetch' failed: KeyError: 'page' (at tests/test_errors.py:")
    assert str(seen).endswith(" in _raise_here)")


def test_debug_shows_a_failing_skills_traceback(tmp_path: Path) -> None:
    (tmp_path / "skills.py").write_text(
        "from loopengine import skill\n\n@skill\ndef boom(ctx):\n    raise ValueError('no luck')\n"
    )
    (tmp_path / "loopengine.yaml").write_text("plugins: [./skills.py]\n")
    (tmp_path / "b.yaml").write_text(
        "id: b\ntrigger: {type: manual}\nanalyze:\n  analysis_steps: [{name: x, skill_id: boom}]\n"
    )
    command = [sys.executable, "-m", "loopengine", "run", "b.yaml", "--debug"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert "ValueError: no luck" in done.stderr
