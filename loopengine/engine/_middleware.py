"""The one stack every skill call goes through: budget · timeout · retry · trace · redact.

Built once per engine; each layer is a small callable wrapping the next, as in starlette.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

import loopengine._tracing as tracing
from loopengine._secrets import redact
from loopengine.contract import Budget
from loopengine.engine._results import kept
from loopengine.engine._run import Run
from loopengine.errors import BudgetExceeded, LoopEngineError, SkillError
from loopengine.skills import SkillContext, SkillDef, SkillOutput

__all__ = ["Handler", "SkillCall", "build_stack", "spent", "translated"]

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_log = logging.getLogger("loopengine.skills")
_MAX_BACKOFF_S = 30.0


@dataclass(slots=True)
class SkillCall:
    run: Run
    definition: SkillDef
    params: dict[str, Any]
    ctx: SkillContext
    max_retries: int = 0
    attempts: int = 0
    keep_result: bool = False
    """Whether its record keeps what the skill returned (an action's call)."""


Handler = Callable[[SkillCall], Awaitable[SkillOutput]]


def _where(exc: BaseException) -> str:
    """Where the exception was raised: the innermost frame, as ``file:line in function``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    file = Path(last.filename)
    with contextlib.suppress(ValueError):
        file = file.relative_to(Path.cwd())
    return f" (at {file}:{last.lineno} in {last.name})"


def translated(exc: Exception, skill: str) -> SkillError:
    """A skill's own exception as a ``SkillError`` saying where it was raised, secrets masked;
    network failures (connection, timeout, HTTP 429/5xx) are worth retrying, nothing else is.
    The traceback goes to the ``loopengine.skills`` logger at DEBUG (``--debug`` shows it)."""
    _log.debug("skill '%s' raised", skill, exc_info=exc)
    message = redact(f"skill '{skill}' failed: {type(exc).__name__}: {exc}{_where(exc)}")
    status = getattr(exc, "status_code", None) or getattr(
        getattr(exc, "response", None), "status_code", None
    )
    network = isinstance(exc, ConnectionError | TimeoutError) or status in _RETRYABLE_STATUS
    return SkillError(message, retryable=network)


def _output(returned: Any) -> SkillOutput:
    if isinstance(returned, SkillOutput):
        return returned
    mapping = type(returned) is dict or isinstance(returned, Mapping)
    confidence = returned.get("confidence") if mapping else None
    usable = isinstance(confidence, int | float) and not isinstance(confidence, bool)
    return SkillOutput(returned, confidence=confidence if usable else None)


async def _invoke(call: SkillCall) -> SkillOutput:
    definition = call.definition
    if definition.takes_model:
        arguments: tuple[Any, ...] = (call.ctx, definition.params.model_validate(call.params))
        keywords: dict[str, Any] = {}
    else:
        arguments, keywords = (call.ctx,), call.params
    if definition.is_async:
        return _output(await definition.fn(*arguments, **keywords))
    returned = await anyio.to_thread.run_sync(partial(definition.fn, *arguments, **keywords))
    return _output(returned)


class _Layer:
    def __init__(self, inner: Handler) -> None:
        self.inner = inner


def spent(run: Run) -> str | None:
    """Why the loop's token, LLM-call or wall-time budget is used up, or None."""
    budget: Budget | None = run.loop.spec.budget
    if budget is None:
        return None
    usage = run.usage
    if budget.tokens is not None and usage.tokens >= budget.tokens:
        return f"token budget of {budget.tokens} spent"
    if budget.llm_calls is not None and usage.llm_calls >= budget.llm_calls:
        return f"LLM-call budget of {budget.llm_calls} spent"
    if budget.wall_ms is not None and _elapsed_ms(run) >= budget.wall_ms:
        return f"wall-time budget of {budget.wall_ms} ms spent"
    return None


class _Budget(_Layer):
    """Refuses the call when the loop's token, LLM-call or wall-time budget is spent."""

    async def __call__(self, call: SkillCall) -> SkillOutput:
        if reason := spent(call.run):
            raise BudgetExceeded(reason)
        return await self.inner(call)


def _elapsed_ms(run: Run) -> float:
    return (time.time() - run.started_at) * 1000


class _Timeout(_Layer):
    """One deadline: what is left of the loop's wall-time budget, when it has one."""

    async def __call__(self, call: SkillCall) -> SkillOutput:
        budget = call.run.loop.spec.budget
        if budget is None or budget.wall_ms is None:
            return await self.inner(call)
        remaining = max(0.0, (budget.wall_ms - _elapsed_ms(call.run)) / 1000)
        try:
            with anyio.fail_after(remaining):
                return await self.inner(call)
        except TimeoutError:
            raise BudgetExceeded(f"wall-time budget of {budget.wall_ms} ms spent") from None


class _Retry(_Layer):
    """Retries retryable failures with exponential backoff and full jitter (or ``retry_after``)."""

    def __init__(self, inner: Handler, base_s: float) -> None:
        super().__init__(inner)
        self.base_s = base_s

    async def __call__(self, call: SkillCall) -> SkillOutput:
        while True:
            call.attempts += 1
            try:
                return await self.inner(call)
            except Exception as exc:
                worth = isinstance(exc, LoopEngineError) and exc.retryable
                if call.attempts > call.max_retries or not worth:
                    raise
                delay = exc.retry_after if isinstance(exc, LoopEngineError) else None
                if delay is None:
                    delay = random.uniform(
                        0, min(_MAX_BACKOFF_S, self.base_s * 2 ** (call.attempts - 1))
                    )
                call.ctx.logger.info(
                    "attempt %d of %d failed, retrying in %.2f s: %s",
                    call.attempts,
                    call.max_retries + 1,
                    delay,
                    exc,
                )
                await anyio.sleep(delay)


def _skill_attributes(call: SkillCall) -> dict[str, tracing.AttributeValue]:
    return {
        "loopengine.skill": call.definition.name,
        "loopengine.step": call.ctx.step,
        "loopengine.attempt": call.attempts or 1,
    }


class _Trace(_Layer):
    """Records each call (step, attempts, duration, ok, metrics; for an action's call what it
    returned, bounded) for the phase record, and in a span; a skill's metrics are also summed
    into the execution's, and its writes join the phase's commit."""

    async def __call__(self, call: SkillCall) -> SkillOutput:
        ended = call.run.on_call() if call.run.on_call is not None else None
        started = time.perf_counter()
        entry: dict[str, Any] = {"skill": call.definition.name, "step": call.ctx.step}
        if call.keep_result and call.ctx.dry_run:
            entry["dry_run"] = True
        try:
            with tracing.span(f"skill {call.definition.name}", _skill_attributes(call)):
                result = await self.inner(call)
        except BaseException as exc:
            entry.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            raise
        else:
            entry["ok"] = True
            if call.keep_result:
                entry["result"] = kept(result.data)
            call.run.written.extend(result.effects)
            if result.metrics:
                entry["metrics"] = dict(result.metrics)
                for name, value in result.metrics.items():
                    call.run.metrics[name] = call.run.metrics.get(name, 0.0) + value
            return result
        finally:
            if ended is not None:
                ended()
            entry["attempts"] = call.attempts or 1
            entry["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            call.run.calls.append(entry)


class _Redact(_Layer):
    """Turns foreign exceptions into ``SkillError`` and keeps secret values out of messages."""

    async def __call__(self, call: SkillCall) -> SkillOutput:
        try:
            return await self.inner(call)
        except LoopEngineError:
            raise
        except Exception as exc:
            raise translated(exc, call.definition.name) from exc


def build_stack(retry_base_s: float = 0.2, *, budget: bool = True, retry: bool = True) -> Handler:
    """The middleware stack, outermost first: budget, timeout, retry, trace, redact.

    A loop without a budget does not need the first two layers, nor a call with no retries the
    third, so engines build the four variants once and pick one per call.
    """
    handler: Handler = _invoke
    handler = _Redact(handler)
    handler = _Trace(handler)
    if retry:
        handler = _Retry(handler, retry_base_s)
    if budget:
        handler = _Budget(_Timeout(handler))
    return handler
