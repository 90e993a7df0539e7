"""Built-in skills of ``loops/memory.yaml`` (seed 003, pillar 1): a profile of each user detected
from their newest exchanges, and a deep summary every ``autolearn.summary_every`` of them by the
analysis node (the research node when it cannot). The chat reads both at each message."""

from __future__ import annotations

from loopengine._json import JSONObject
from loopengine.autolearn._skills import ask, store_of
from loopengine.skills import SkillContext, skill

__all__ = ["SUMMARY_TIMEOUT_S", "autolearn_profile", "autolearn_summarize"]

SUMMARY_TIMEOUT_S = 120.0
"""Longest a node may take on one deep summary (seed 003) before the next node is asked."""


@skill(
    "autolearn.profile",
    description="Detect the profile (language, expertise, preferred length, topics) of each user "
    "with exchanges it has not read, at most `limit` users a cycle, and list the users due for "
    "a deep summary.",
)
async def autolearn_profile(ctx: SkillContext, limit: int = 100) -> JSONObject:
    from loopengine.autolearn._memory import Exchange, detect_profile
    from loopengine.store import memory

    store, settings = store_of(ctx), ctx.config.autolearn
    keep = settings.memory_keep
    stale = await store.read(memory.stale_profiles, limit)
    for row in stale:
        user = row.user_id
        rows = await store.read(memory.exchanges, user, keep)
        found = detect_profile([Exchange(r.message, r.reply, r.category) for r in rows])
        if not ctx.dry_run:
            detected, now = found.as_dict(), ctx.clock()
            await store.write(memory.put_profile, user, detected, row.exchanges, now)
    every = settings.summary_every
    due, most = await store.read(memory.summaries_due, every, limit)
    users = [row.user_id for row in due]
    if users:
        verdict = f"{len(users)} user{'s' * (len(users) != 1)} due for a deep summary"
    else:
        verdict = f"not enough samples ({most}/{every}) for a deep summary"
    if stale:
        verdict += f"; {len(stale)} profile{'s' * (len(stale) != 1)} updated"
    return {"memory": {"profiled": len(stale), "due": users, "verdict": verdict}}


@skill(
    "autolearn.summarize",
    description="Write the deep summary of each user in `users` (at most `limit` a cycle) with "
    "the analysis node, the research node when the analysis node fails or is late (120 s).",
)
async def autolearn_summarize(
    ctx: SkillContext, users: list[str], limit: int = 3, dry_run: bool = False
) -> JSONObject:
    from loopengine.autolearn._memory import Exchange, Profile, read_summary, summary_messages
    from loopengine.store import memory

    store, settings, chain = store_of(ctx), ctx.config.autolearn, ctx.config.cluster.chain
    nodes = list(dict.fromkeys(settings.node(role, chain) for role in ("analysis", "research")))
    if dry_run or ctx.dry_run:
        return {"log": {"message": f"would summarize {', '.join(users[:limit])}"}}
    summarized, failed = [], []
    for user in users[:limit]:
        row = await store.read(memory.profile, user)
        if row is None:
            continue
        rows = await store.read(memory.exchanges, user, settings.memory_keep)
        messages = summary_messages(
            [Exchange(r.message, r.reply, r.category) for r in rows],
            row.summary,
            Profile.of(row.profile or {}),
        )
        for node in nodes:
            answer = await ask(ctx.llm, node, messages, SUMMARY_TIMEOUT_S) if ctx.llm else None
            summary = read_summary(answer) if answer is not None else None
            if summary is not None:
                now = ctx.clock()
                await store.write(memory.put_summary, user, summary, node, row.exchanges, now)
                summarized.append({"user": user, "node": node})
                break
        else:
            failed.append(user)
    message = f"{len(summarized)} deep summar{'ies' if len(summarized) != 1 else 'y'} written"
    if failed:
        message += f"; no node could summarize {', '.join(failed)} ({', '.join(nodes)})"
    return {"log": {"message": message}, "memory": {"summarized": summarized, "failed": failed}}
