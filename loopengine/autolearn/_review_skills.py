"""Built-in skills of ``loops/autoreview.yaml`` (seed 003, pillar 3): watch each category's new
instructions and roll them back when its responses got worse; otherwise take the weakest
category's worst responses, have the review node propose better instructions, the grader
validate them, the analysis node vote, and replay the weak messages under both versions (GEPA's
rule: the candidate must score strictly better). Versions live in the store; no file changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopengine._json import JSONObject
from loopengine.autolearn._skills import (
    NO_CLUSTER,
    ask,
    current_orders,
    grade_reply,
    grader_of,
    store_of,
)
from loopengine.skills import SkillContext, skill

if TYPE_CHECKING:
    from loopengine.autolearn._review import Judgement
    from loopengine.store import PromptVersion
    from loopengine.store.autolearn import ChatSample

__all__ = [
    "PER_CATEGORY",
    "REVIEW_TIMEOUT_S",
    "VOTE_TIMEOUT_S",
    "autolearn_apply_prompt",
    "autolearn_check",
    "autolearn_propose",
    "autolearn_replay",
    "autolearn_rollback_prompt",
    "autolearn_vote",
    "autolearn_watch",
]

REVIEW_TIMEOUT_S = 60.0
"""Longest the review node may take to propose, and the grader to validate (seed 003)."""
VOTE_TIMEOUT_S = 120.0
"""Longest the analysis node may take to vote; past it the vote counts as timed out."""
PER_CATEGORY = 3
"""Weak responses a proposal is made from, and replayed."""


@dataclass(frozen=True, slots=True)
class _Judged:
    """A watched version's judgement (``judge_version``), made through response ``through``;
    ``to`` is the version a rollback gives back."""

    category: str
    version: int
    to: int
    judgement: Judgement
    reason: str
    through: int

    def as_json(self) -> JSONObject:
        return {
            "category": self.category,
            "version": self.version,
            "to": self.to,
            "judgement": self.judgement,
            "reason": self.reason,
            "through": self.through,
        }


def _judgements(
    active: dict[str, PromptVersion], rows: list[ChatSample], min_samples: int
) -> list[_Judged]:
    """How each watched version fares against the mean grade before it (``judge_version``);
    a version with no response since it was last judged waits (a cycle counts on new evidence
    only)."""
    from loopengine.autolearn._review import judge_version, judged_grade
    from loopengine.autolearn._scores import Sample

    found = []
    for category, prompt in sorted(active.items()):
        if prompt.state != "watched":
            continue
        under = [
            (r.id, grade)
            for r in rows
            if r.category == category and r.prompt_version == prompt.version
            if (grade := judged_grade(Sample.of(r))) is not None
        ]
        through = max((sample_id for sample_id, _ in under), default=0)
        verdict: Judgement
        if through and through <= prompt.judged_id:
            verdict, reason = "wait", "no graded response since the last judgement"
        else:
            verdict, reason = judge_version(
                prompt.baseline,
                [grade for _, grade in under],
                cycles_watched=prompt.watched,
                min_samples=min_samples,
            )
        found.append(_Judged(category, prompt.version, prompt.parent, verdict, reason, through))
    return found


def _weakest_category(
    active: dict[str, PromptVersion], rows: list[ChatSample], min_samples: int
) -> tuple[JSONObject | None, str]:
    """The category to review (the lowest mean grade among those with weak responses under a
    version no longer watched), and one line saying why."""
    from loopengine.autolearn._review import category_means, judged_grade, weakest
    from loopengine.autolearn._scores import Sample

    def settled(row: ChatSample) -> bool:
        """Answered under the category's current instructions, no longer watched."""
        found = active.get(row.category)
        if found is None:
            return row.prompt_version == 0
        return row.prompt_version == found.version and found.state != "watched"

    kept = [row for row in rows if settled(row)]
    graded: dict[str, int] = {}
    for row in kept:
        if judged_grade(Sample.of(row)) is not None:
            graded[row.category] = graded.get(row.category, 0) + 1
    enough = {c for c, n in graded.items() if n >= min_samples}
    if not enough:
        return None, f"not enough samples ({max(graded.values(), default=0)}/{min_samples})"
    kept = [row for row in kept if row.category in enough]
    means = category_means(Sample.of(row) for row in kept)
    weak = weakest(kept, PER_CATEGORY)
    if not weak:
        return None, "no weak responses: every graded response is good enough"
    category = min(weak, key=lambda c: (means.get(c, 10.0), c))
    prompt = active.get(category)
    chosen: JSONObject = {
        "category": category,
        "version": prompt.version if prompt else 0,
        "text": prompt.text if prompt else "",
        "mean": round(means[category], 3) if category in means else None,
        "weak": [
            {"id": w.sample_id, "node": w.node, "message": w.message, "reply": w.reply,
             "quality": w.quality}
            for w in weak[category]
        ],
    }  # fmt: skip
    mean = chosen["mean"]
    return chosen, f"{category}: {len(weak[category])} weak responses (mean grade {mean})"


@skill(
    "autolearn.watch",
    description="Judge each category's watched instructions against the mean grade before them "
    "(a drop of more than 15 % rolls them back), then pick the weakest category to review.",
)
async def autolearn_watch(ctx: SkillContext) -> JSONObject:
    from loopengine.store import autolearn, prompts

    settings = ctx.config.autolearn
    store = store_of(ctx)
    active, rows = await store.read(autolearn.review_window, settings.window)
    judged = _judgements(active, rows, settings.min_samples)
    rollbacks = [j for j in judged if j.judgement == "rollback"]
    if not ctx.dry_run:
        for j in judged:
            if j.judgement in ("keep", "confirm"):
                confirm = j.judgement == "confirm"
                mark = (j.category, j.version, j.through)
                await store.write(prompts.judged, *mark, confirm=confirm)
    shown = [j.as_json() for j in judged]
    if rollbacks:
        verdict = "; ".join(f"{j.category} v{j.version}: {j.reason}" for j in rollbacks)
        return {"review": {"rollbacks": [j.as_json() for j in rollbacks], "judged": shown,
                           "chosen": None, "verdict": f"roll back ({verdict})"}}  # fmt: skip
    chosen, verdict = _weakest_category(active, rows, settings.min_samples)
    if not ctx.config.cluster.nodes:
        chosen, verdict = None, NO_CLUSTER
    return {"review": {"rollbacks": [], "judged": shown, "chosen": chosen, "verdict": verdict}}


def _runtime_or_none(ctx: SkillContext) -> Any:
    return ctx.llm if ctx.llm is not None and ctx.config.cluster.nodes else None


def _weak_of(chosen: dict[str, Any]) -> list[Any]:
    from loopengine.autolearn._review import Weak

    return [
        Weak(w["id"], w["node"], chosen["category"], w["message"], w["reply"], w["quality"])
        for w in chosen["weak"]
    ]


@skill(
    "autolearn.propose",
    description="Have the review node propose better instructions for the chosen category from "
    "its weak responses (60 s).",
)
async def autolearn_propose(ctx: SkillContext, chosen: dict[str, Any] | None) -> JSONObject:
    from loopengine.autolearn._review import parse_proposal, review_messages
    from loopengine.store import prompts

    runtime = _runtime_or_none(ctx)
    if chosen is None or runtime is None:
        return {"proposal": None}
    node = ctx.config.autolearn.node("review", ctx.config.cluster.chain)
    messages = review_messages(chosen["category"], chosen["text"], _weak_of(chosen))
    answer = await ask(runtime, node, messages, REVIEW_TIMEOUT_S)
    candidate = parse_proposal(answer) if answer is not None else None
    refused = await store_of(ctx).read(prompts.rolled_back_texts, chosen["category"])
    why = "no answer" if answer is None else "no usable proposal" if candidate is None else None
    tried = {prompts.plain(chosen["text"]), *refused}
    if candidate is not None and prompts.plain(candidate) in tried:
        candidate, why = None, "the proposal is the current instructions or was rolled back"
    return {"proposal": {"category": chosen["category"], "parent": chosen["version"],
                         "candidate": candidate, "node": node, "problem": why}}  # fmt: skip


@skill(
    "autolearn.check",
    description="Have the grader validate the proposed instructions: its 1–10 grade of how "
    "well they fix the weak responses, as a 0–1 validation (60 s).",
)
async def autolearn_check(
    ctx: SkillContext, chosen: dict[str, Any] | None, proposal: dict[str, Any] | None
) -> JSONObject:
    from loopengine.autolearn._review import validation_messages
    from loopengine.autolearn._scores import parse_grade

    runtime, grader = grader_of(ctx)
    if chosen is None or proposal is None or not proposal["candidate"] or grader is None:
        return {"validation": None}
    messages = validation_messages(
        chosen["category"], chosen["text"], proposal["candidate"], _weak_of(chosen)
    )
    answer = await ask(runtime, grader, messages, REVIEW_TIMEOUT_S)
    grade = parse_grade(answer) if answer is not None else None
    return {"validation": {"score": grade / 10 if grade is not None else None, "node": grader}}


@skill(
    "autolearn.vote",
    description="Have the analysis node approve or reject a validated proposal (meta-review, "
    "120 s; a late or failed vote counts as timed out, which does not block the change).",
)
async def autolearn_vote(
    ctx: SkillContext,
    chosen: dict[str, Any] | None,
    proposal: dict[str, Any] | None,
    validation: dict[str, Any] | None,
) -> JSONObject:
    from loopengine.autolearn._review import parse_vote, validated, vote_messages

    runtime = _runtime_or_none(ctx)
    score = validation["score"] if validation else None
    if chosen is None or proposal is None or runtime is None or not validated(score):
        return {"vote": None}
    node = ctx.config.autolearn.node("analysis", ctx.config.cluster.chain)
    messages = vote_messages(chosen["category"], chosen["text"], proposal["candidate"], score)
    down = runtime.cluster.available(node)
    answer = await ask(runtime, node, messages, VOTE_TIMEOUT_S)
    if answer is not None:
        return {"vote": {"vote": parse_vote(answer), "node": node}}
    why = down or runtime.cluster.health[node].last_error or "no answer"
    return {"vote": {"vote": "timeout", "node": node, "why": why}}


async def _replay(
    ctx: SkillContext, chosen: dict[str, Any], node: str | None, text: str
) -> list[float | None]:
    """Each weak message answered again under ``text`` by ``node``, graded."""
    from loopengine.llm import answer_messages
    from loopengine.store.autolearn import MAX_TEXT

    runtime, grader = grader_of(ctx)
    if node is None or grader is None:
        return [None] * len(chosen["weak"])
    timeout = ctx.config.cluster.nodes[node].timeout_s
    grades = []
    for weak in chosen["weak"]:
        reply = await ask(runtime, node, answer_messages(weak["message"], text or None), timeout)
        shown = reply[:MAX_TEXT] if reply else None
        grades.append(await grade_reply(runtime, grader, weak["message"], shown) if shown else None)
    return grades


@skill(
    "autolearn.replay",
    description="Answer the weak messages again under the current and the proposed "
    "instructions, have the grader grade both, and decide (validation > 0.7, vote approves or "
    "timed out, candidate strictly better on the same inputs).",
)
async def autolearn_replay(
    ctx: SkillContext,
    chosen: dict[str, Any] | None,
    proposal: dict[str, Any] | None,
    validation: dict[str, Any] | None,
    vote: dict[str, Any] | None,
    verdict: str = "",
) -> JSONObject:
    from loopengine.autolearn._review import Vote, decide_candidate, worth_replaying

    if chosen is None or proposal is None or not proposal["candidate"]:
        reason = verdict if proposal is None else f"no candidate: {proposal['problem']}"
        return {"candidate": {"applied": False, "reason": reason}}
    score = validation["score"] if validation else None
    cast: Vote = vote["vote"] if vote else "reject"
    current: list[float | None] = []
    candidate: list[float | None] = []
    if worth_replaying(score, cast):
        # One node answers both versions: the same inputs, the same model.
        node = ctx.llm.cluster.pick(chosen["category"], await current_orders(ctx))
        current = await _replay(ctx, chosen, node, chosen["text"])
        candidate = await _replay(ctx, chosen, node, proposal["candidate"])
    found = decide_candidate(score, cast, current, candidate)
    return {"candidate": {"applied": found.applied, "reason": found.reason,
                         "current": current, "candidate": candidate}}  # fmt: skip


@skill(
    "autolearn.apply_prompt",
    description="Make the accepted instructions the category's active version, watched for its "
    "first cycles against the mean grade before it (kept in the autolearn history).",
)
async def autolearn_apply_prompt(
    ctx: SkillContext,
    chosen: dict[str, Any],
    proposal: dict[str, Any],
    reason: str,
    dry_run: bool = False,
) -> JSONObject:
    from loopengine.store import autolearn

    category = chosen["category"]
    if dry_run or ctx.dry_run:
        return {"log": {"message": f"would apply new instructions to {category}: {reason}"}}
    version = await store_of(ctx).write(
        autolearn.apply_prompt,
        category,
        proposal["candidate"],
        parent=int(proposal["parent"]),
        baseline=chosen["mean"],
        reason=reason,
        execution_id=ctx.execution_id,
        now=ctx.clock(),
    )
    if version is None:
        message = f"{category}: its instructions changed meanwhile; the proposal is dropped"
        return {"log": {"message": message}, "prompt": None}
    message = f"{category}: instructions v{version} applied ({reason})"
    return {"log": {"message": message}, "prompt": {"category": category, "version": version}}


@skill(
    "autolearn.rollback_prompt",
    description="Give each category in `rollbacks` back the instructions its watched version "
    "replaced (kept in the autolearn history with the reason).",
)
async def autolearn_rollback_prompt(
    ctx: SkillContext, rollbacks: list[dict[str, Any]], dry_run: bool = False
) -> JSONObject:
    from loopengine.store import autolearn

    lines = [f"{r['category']}: v{r['version']} → v{r['to']} ({r['reason']})" for r in rollbacks]
    if dry_run or ctx.dry_run:
        return {"log": {"message": "would roll back " + "; ".join(lines)}}
    asked = [(str(r["category"]), int(r["version"]), r["reason"]) for r in rollbacks]
    store, now = store_of(ctx), ctx.clock()
    rolled = await store.write(autolearn.roll_back_prompts, asked, ctx.execution_id, now)
    done = [rollback.as_json() for rollback in rolled]
    said = [f"{d['category']}: v{d['from']} → v{d['to']} ({d['reason']})" for d in done]
    message = "rolled back " + "; ".join(said) if said else "nothing to roll back any more"
    return {"log": {"message": message}, "rollbacks": done}
