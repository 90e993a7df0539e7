"""The one error tree of loopengine.

    LoopEngineError           ``retryable`` / ``retry_after`` tell the retry middleware
     ├── ContractError        a loop, config or plugin is invalid (carries diagnostics)
     ├── ExpressionError      an expression or template does not compile or evaluate
     ├── TriggerError         a trigger cannot be scheduled or matched
     ├── SkillError           a skill failed
     ├── LLMError             an LLM node failed or answered unusably (a broken stream too)
     ├── StorageError         the store or an artifact backend failed
     │    ├── StoreUnavailable the database is out of reach or out of space for now (retryable)
     │    └── ThreadError     a chat-thread batch refused (``status``: 409, 412, 422, 428)
     ├── BudgetExceeded       a loop's token, call or time budget ran out
     ├── NotResumable         an execution is not in a state that allows the request
     ├── NotFound             what a request names (an execution, a served loop) does not exist
     └── LeaseLost            a job's lease passed to another daemon: its holder stops

Foreign errors (yaml, jmespath, httpx, sqlite, a skill's own exceptions) are translated where
they enter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopengine._diagnostics import Diagnostic

__all__ = [
    "BudgetExceeded",
    "ContractError",
    "ExpressionError",
    "LLMError",
    "LeaseLost",
    "LoopEngineError",
    "NotFound",
    "NotResumable",
    "SkillError",
    "StorageError",
    "StoreUnavailable",
    "ThreadError",
    "TriggerError",
]


class LoopEngineError(Exception):
    """Base of every error loopengine raises on purpose; most are not worth retrying."""

    retryable: bool = False
    retry_after: float | None = None


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


class StoreUnavailable(StorageError):
    """The database cannot be reached, or cannot take writes (disk full), for now: worth
    retrying after ``retry_after`` seconds; the HTTP API answers 503 with ``Retry-After``."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetExceeded(LoopEngineError):
    """A loop used up its token, LLM-call or wall-time budget."""


class ThreadError(StorageError):
    """A chat-thread batch refused; ``status`` is the HTTP status the API answers with."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class NotResumable(LoopEngineError):
    """The execution is not in a state that allows the request (resume, approve, reject)."""


class NotFound(LoopEngineError):
    """What a request names (an execution, a loop a daemon serves) does not exist; the HTTP API
    answers 404."""


class LeaseLost(LoopEngineError):
    """This daemon's lease on a job expired and another daemon claimed it (this one was paused
    or cut off): what it would still commit or act on is refused, so the job runs once."""
