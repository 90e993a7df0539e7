"""Skills used by the contract tests: required params, types, no dry_run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from loopengine import SkillContext, skill


@skill("needs_target")
def needs_target(ctx: SkillContext, target: str, limit: int = 10) -> dict[str, Any]:
    """Act on one target."""
    return {"target": target, "limit": limit}


class ReportParams(BaseModel):
    title: str
    pages: int = 1


@skill("report")
async def report(ctx: SkillContext, params: ReportParams) -> dict[str, Any]:
    """Write a report described by a pydantic model."""
    return params.model_dump()


@skill("anything")
def anything(ctx: SkillContext, **params: Any) -> dict[str, Any]:
    """Accept any param."""
    return params
