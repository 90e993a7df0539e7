"""The one error tree of loopengine.

    LoopEngineError
     ├── ContractError        a loop, config or plugin is invalid (carries diagnostics)
     ├── ExpressionError      an expression or template does not compile or evaluate
     ├── TriggerError         a trigger cannot be scheduled or matched
     ├── SkillError           a skill failed (``retryable`` tells the retry middleware)
     ├── LLMError             an LLM node failed or answered unusably
     ├── StorageError         the store or an artifact backend failed
     └── BudgetExceeded       a loop's token, call or time budget ran out

Foreign errors (yaml, jmespath, httpx, sqlite) are translated where they enter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopengine.contract import Diagnostic

__all__ = [
    "BudgetExceeded",
    "ContractError",
    "ExpressionError",
    "LLMError",
    "LoopEngineError",
    "SkillError",
    "StorageError",
    "TriggerError",
]


class LoopEngineError(Exception):
    """Base of every error loopengine raises on purpose."""


class ContractError(LoopEngineError):
    """A loop, config or plugin is invalid; ``diagnostics`` lists every problem found."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)


class ExpressionError(LoopEngineError):
    """An expression or ``${ }`` template failed to compile or to evaluate."""

    def __init__(self, message: str, source: str = "", column: int | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.column = column


class TriggerError(LoopEngineError):
    """A trigger definition cannot be scheduled or evaluated."""


class SkillError(LoopEngineError):
    """A skill failed; the retry middleware retries it only when ``retryable``."""

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class LLMError(LoopEngineError):
    """An LLM node was unreachable, refused the call, or answered unusably."""

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.node = node
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after


class StorageError(LoopEngineError):
    """The store or an artifact backend failed."""


class BudgetExceeded(LoopEngineError):
    """A loop used up its token, LLM-call or wall-time budget."""
