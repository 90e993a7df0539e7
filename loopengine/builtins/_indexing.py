"""``knowledge.index``: a loop keeps knowledge collections up to date (on a cron, or on an event
when their files change), as ``loopengine knowledge index`` does; each run re-cuts only the
files whose content changed.

The knowledge package (the store, the LLM client) is imported when the skill runs."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from loopengine.builtins._llm import llm_runtime
from loopengine.contract import CollectionName
from loopengine.errors import NotFound, SkillError
from loopengine.skills import SkillContext, SkillOutput, skill

__all__ = ["knowledge_index"]

Collections = Annotated[list[CollectionName], Field(max_length=100)]


@skill(
    "knowledge.index",
    description="Bring knowledge collections (`knowledge:` in loopengine.yaml; all when "
    "`collections` is empty) up to date with their files: new and changed files cut and "
    "indexed, deleted ones removed, unchanged ones skipped.",
)
async def knowledge_index(
    ctx: SkillContext, collections: Collections | None = None, dry_run: bool = False
) -> SkillOutput:
    """Args:
    collections: The collections indexed (default: every one).
    dry_run: Name the collections that would be indexed, indexing nothing.
    """
    from loopengine.knowledge import collection_of, index

    names = list(collections or ctx.config.knowledge)
    try:
        embedded = any(collection_of(ctx.config, name).embeddings for name in names)
    except NotFound as exc:
        raise SkillError(f"knowledge.index: {exc}") from None
    if dry_run or ctx.dry_run:
        return SkillOutput(data={"knowledge_index": {"dry_run": True, "collections": names}})
    if ctx.store is None:
        raise SkillError("knowledge.index needs the engine's store: collections are indexed there")
    cluster = llm_runtime(ctx).cluster if embedded and ctx.llm is not None else None
    reports = await index(ctx.store, ctx.config, ctx.base, names, cluster=cluster)
    for report in reports:
        ctx.logger.info(
            "%s: %d files, %d new or changed, %d removed, %d chunks written, %d skipped",
            report.collection,
            report.files,
            report.changed,
            report.removed,
            report.chunks,
            len(report.skipped),
        )
    indexed = [report.as_json() for report in reports]
    return SkillOutput(data={"knowledge_index": {"collections": indexed}})
