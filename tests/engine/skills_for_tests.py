"""Skills the engine tests drive: each does one observable thing and records its calls."""

from __future__ import annotations

import base64
from typing import Any

import anyio
from pydantic import BaseModel, model_validator

from loopengine import SkillContext, SkillError, SkillOutput, skill
from loopengine.store import AppendEvent

CALLS: list[dict[str, Any]] = []
FAILURES: dict[str, int] = {}


def _record(ctx: SkillContext, name: str, **extra: Any) -> None:
    CALLS.append({"skill": name, "key": ctx.idempotency_key, "phase": ctx.phase, **extra})


@skill("report")
async def report(
    ctx: SkillContext, values: dict[str, Any] | None = None, confidence: float | None = None
) -> SkillOutput:
    """Return ``values`` (merged into the context) with a confidence."""
    _record(ctx, "report")
    return SkillOutput(data=values or {}, confidence=confidence)


@skill("fix")
async def fix(
    ctx: SkillContext, dry_run: bool = False, after: int = 0, item: Any = None, batch: Any = None
) -> dict[str, Any]:
    """Pretend to fix things; ``after`` is what remains."""
    _record(ctx, "fix", dry_run=dry_run, item=item, batch=batch)
    return {} if dry_run else {"violations": {"after": after}}


@skill("fail_on_dry_run")
async def fail_on_dry_run(ctx: SkillContext, dry_run: bool = False) -> dict[str, Any]:
    _record(ctx, "fail_on_dry_run", dry_run=dry_run)
    if dry_run:
        raise SkillError("dry run found a problem")
    return {}


@skill("undo")
async def undo(ctx: SkillContext, item: Any = None) -> dict[str, Any]:
    """Undo a fix."""
    _record(ctx, "undo", item=item)
    return {"undone": True}


@skill("flaky")
async def flaky(ctx: SkillContext, failures: int = 1, retryable: bool = True) -> dict[str, Any]:
    """Fail ``failures`` times for a key, then succeed."""
    seen = FAILURES.get(ctx.idempotency_key, 0)
    _record(ctx, "flaky", attempt=seen + 1)
    if seen < failures:
        FAILURES[ctx.idempotency_key] = seen + 1
        raise SkillError("temporarily unavailable", retryable=retryable, retry_after=0.001)
    return {"flaky": "ok"}


@skill("boom")
async def boom(ctx: SkillContext) -> dict[str, Any]:
    _record(ctx, "boom")
    raise ValueError("something broke")


@skill("slow")
async def slow(ctx: SkillContext, seconds: float = 1.0) -> dict[str, Any]:
    _record(ctx, "slow")
    await anyio.sleep(seconds)
    return {}


@skill("spend")
async def spend(ctx: SkillContext, tokens: int = 100) -> SkillOutput:
    """Count LLM usage into the loop's budget, as an LLM-calling skill does."""
    _record(ctx, "spend")
    assert ctx.spend is not None
    ctx.spend(tokens, 1)
    return SkillOutput(data={"spent": tokens}, metrics={"llm.tokens": tokens})


@skill("sync_count")
def sync_count(ctx: SkillContext, items: list[Any] | None = None) -> dict[str, Any]:
    """A synchronous skill (runs in a worker thread)."""
    _record(ctx, "sync_count")
    return {"counted": len(items or [])}


@skill("secretive")
async def secretive(ctx: SkillContext, token: str) -> dict[str, Any]:
    """Echo what it was given, whole and transformed, as a value, a key and in a log line, to
    prove that no form of a secret leaves the process."""
    ctx.logger.warning("calling the API with %s", token)
    half = len(token) // 2
    return {
        "echo": f"token={token}",
        "upper": token.upper(),
        "base64": base64.b64encode(token.encode()).decode(),
        "split": [token[:half], token[half:]],
        token: "as a key",
    }


@skill("sized")
async def sized(ctx: SkillContext, size: int = 0) -> dict[str, Any]:
    """Return ``size`` characters of text."""
    return {"text": "x" * size}


@skill("note_event")
async def note_event(ctx: SkillContext) -> SkillOutput:
    """Hand the store an event to write with this step's commit."""
    _record(ctx, "note_event")
    written = AppendEvent("noted", ctx.loop_id, {"step": ctx.step}, ctx.clock(), ctx.execution_id)
    return SkillOutput(data={"noted": True}, effects=(written,))


@skill("chatty")
async def chatty(ctx: SkillContext, lines: int = 1, message: str = "line %d") -> dict[str, Any]:
    """Log ``lines`` INFO lines (``message`` formatted with each's number) and one DEBUG line."""
    ctx.logger.debug("not kept")
    for number in range(1, lines + 1):
        ctx.logger.info(message, number)
    return {"logged": lines}


class Window(BaseModel):
    """A window whose ``start`` is before its ``end``."""

    start: int
    end: int

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.start >= self.end:
            raise ValueError(f"start {self.start} is not before end {self.end}")
        return self


@skill("window")
async def window(ctx: SkillContext, params: Window) -> dict[str, Any]:
    """Return the window's length (its params are one model)."""
    return {"length": params.end - params.start}
