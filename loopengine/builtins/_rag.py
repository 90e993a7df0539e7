"""``rag.retrieve`` and ``rag.answer``: a knowledge collection (``knowledge:``) searched, and
answered from with citations or refused by the corrective pipeline (``knowledge.corrective``),
its grader, rewriter and answering model on the cluster and each model call counted into the
loop's budget.

The knowledge package (the store, the LLM client) is imported when a skill runs."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loopengine.builtins._knowledge import Question, located
from loopengine.builtins._llm import Usage, llm_runtime
from loopengine.contract import CollectionName, Config, KnowledgeCollection
from loopengine.errors import ContractError, NotFound, SkillError
from loopengine.knowledge.corrective import MAX_GRADED, MAX_REWRITES
from loopengine.skills import SkillContext, SkillOutput, skill

if TYPE_CHECKING:
    from loopengine.knowledge import Chunk, Readable
    from loopengine.knowledge.corrective import ChunkLike, PromptMessage
    from loopengine.llm import Cluster

__all__ = ["KNOWLEDGE_CATEGORY", "AnswerParams", "grader_node", "rag_answer", "rag_retrieve"]

KNOWLEDGE_CATEGORY = "knowledge"
"""The routing category of the rewriter and the answering model (``default`` when unrouted)."""
RetrieveK = Annotated[int, Field(ge=1, le=100)]
"""At most ``knowledge.MAX_K`` chunks: its module loads the store, so the bound is written out."""


class AnswerParams(BaseModel):
    """``rag.answer``'s params: the question, the collection, and the pipeline's bounds."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    question: Question = Field(description="What is asked.")
    collection: CollectionName = Field(description="The collection under `knowledge:`.")
    k: int = Field(5, ge=1, le=MAX_GRADED, description="Chunks retrieved and graded per search.")
    upper: float = Field(0.7, ge=0, le=1, description="A grade above it makes a retrieval correct.")
    lower: float = Field(
        0.3, ge=0, le=1, description="A grade above it makes a retrieval ambiguous."
    )
    max_rewrites: int = Field(
        2, ge=0, le=MAX_REWRITES, description="Rewritten queries tried at most."
    )
    max_calls: int | None = Field(
        None, ge=1, le=1_000, description="Model calls at most (default: all the others allow)."
    )
    deadline_s: float = Field(
        120, gt=0, le=3_600, description="Seconds the whole pipeline may take."
    )
    dry_run: bool = Field(False, description="Say what would be asked, asking nothing.")

    @model_validator(mode="after")
    def _ordered(self) -> AnswerParams:
        if self.lower >= self.upper:
            raise ValueError(
                f"lower {self.lower:g} is not under upper {self.upper:g}: a grade above upper "
                "makes a retrieval correct, above lower ambiguous"
            )
        return self


def grader_node(config: Config, collection: KnowledgeCollection, routed: Sequence[str]) -> str:
    """The node that grades what ``collection`` gives: its ``grader``, else ``autolearn.grader``
    when it is in the cluster, else the first of the ``routed`` nodes; ``SkillError`` without
    one."""
    if collection.grader is not None:
        return collection.grader
    if config.autolearn.grader in config.cluster.nodes:
        return config.autolearn.grader
    if not routed:
        raise SkillError("rag.answer: no node of the cluster can grade what is retrieved")
    return routed[0]


def _store(ctx: SkillContext, skill: str) -> Readable:
    if ctx.store is None:
        raise SkillError(f"{skill} needs the engine's store: knowledge bases are indexed there")
    return ctx.store


def _collection(ctx: SkillContext, skill: str, name: str) -> KnowledgeCollection:
    from loopengine.knowledge import collection_of

    try:
        return collection_of(ctx.config, name)
    except NotFound as exc:
        raise SkillError(f"{skill}: {exc}") from None


async def _search(
    ctx: SkillContext, usage: Usage, name: str, query: str, k: int
) -> Sequence[Chunk]:
    """``query``'s chunks of collection ``name``; when it has ``embeddings``, the query is
    embedded by the engine's cluster, a model call counted. ``SkillError`` when the collection
    was never indexed."""
    from loopengine.knowledge import search

    cluster = None
    if _collection(ctx, usage.skill, name).embeddings is not None:
        cluster = None if ctx.llm is None else llm_runtime(ctx).cluster
        usage.start()
    store = _store(ctx, usage.skill)
    try:
        found = await search(store, ctx.config, name, query, k, cluster=cluster)
    except (ContractError, NotFound) as exc:
        raise SkillError(f"{usage.skill}: {exc}") from None
    return found


@skill(
    "rag.retrieve",
    description="Search a knowledge collection (`knowledge:` in loopengine.yaml): the `k` "
    "chunks that best match `query`, best first, each with its source file, heading, position "
    "in the file, score and text.",
)
async def rag_retrieve(
    ctx: SkillContext, query: Question, collection: CollectionName, k: RetrieveK = 5
) -> SkillOutput:
    """Args:
    query: The words searched for.
    collection: The collection under `knowledge:`.
    k: Most chunks returned.
    """
    usage = Usage(ctx, "rag.retrieve")
    chunks = await _search(ctx, usage, collection, query, k)
    found = {"collection": collection, "query": query, "chunks": [located(c) for c in chunks]}
    return SkillOutput(data={"retrieval": found}, metrics=usage.metrics)


class _Models:
    """The pipeline's model ports on the cluster: ``grader`` grades, ``writer`` rewrites the
    query and answers; each call counted by ``usage``."""

    def __init__(self, cluster: Cluster, grader: str, writer: str, usage: Usage) -> None:
        self.cluster, self.grader, self.writer, self.usage = cluster, grader, writer, usage

    async def ask(self, node: str, messages: Sequence[PromptMessage]) -> str:
        from loopengine.knowledge.corrective import MAX_READ
        from loopengine.llm import parse_reply

        self.usage.start()
        completion = await self.cluster.chat(
            node, [{"role": m["role"], "content": m["content"]} for m in messages]
        )
        self.usage.ended(completion.tokens)
        return parse_reply(completion.choice, ()).content[: MAX_READ + 1]

    async def grade(self, question: str, chunk: ChunkLike) -> str:
        from loopengine.knowledge.corrective import grade_messages

        return await self.ask(self.grader, grade_messages(question, chunk))

    async def rewrite(self, question: str, tried: Sequence[str]) -> str:
        from loopengine.knowledge.corrective import rewrite_messages

        return await self.ask(self.writer, rewrite_messages(question, tried))

    async def answer(self, messages: Sequence[PromptMessage]) -> str:
        return await self.ask(self.writer, messages)


@skill(
    "rag.answer",
    description="Answer `question` from a knowledge collection with citations, or refuse saying "
    "what was searched (corrective RAG): each retrieved chunk graded 0–1 by the collection's "
    "grader; while no grade passes `upper`, the query rewritten (at most `max_rewrites`), then, "
    "when none passes `lower`, the collection's `web` search asked if it has one (one that fails "
    "finds nothing); only passages above `lower` are evidence. Bounded by `max_calls` and "
    "`deadline_s`; every call counted into the loop's budget.",
)
async def rag_answer(ctx: SkillContext, params: AnswerParams) -> SkillOutput:
    from loopengine.builtins._websearch import web_searcher
    from loopengine.knowledge.corrective import (
        CragSettings,
        Ports,
        Thresholds,
        corrective_answer,
        unasked,
    )

    spec = _collection(ctx, "rag.answer", params.collection)
    web = None if spec.web is None else web_searcher(spec.web, ctx.config.actions.http.allow)
    if params.dry_run or ctx.dry_run:
        return SkillOutput(data={"rag": unasked(params.question, params.collection)})
    cluster = llm_runtime(ctx).cluster
    writer = cluster.pick(KNOWLEDGE_CATEGORY)
    if writer is None:
        raise SkillError(
            f"rag.answer: no node of the cluster is available for {KNOWLEDGE_CATEGORY!r}"
        )
    usage = Usage(ctx, "rag.answer")
    grader = grader_node(ctx.config, spec, cluster.route(KNOWLEDGE_CATEGORY))
    models = _Models(cluster, grader, writer, usage)
    ports = Ports(
        retrieve=partial(_search, ctx, usage, params.collection),
        grade=models.grade,
        rewrite=models.rewrite,
        answer=models.answer,
        web=web,
    )
    settings = CragSettings(
        k=params.k,
        thresholds=Thresholds(upper=params.upper, lower=params.lower),
        max_rewrites=params.max_rewrites,
        max_calls=params.max_calls,
        deadline_s=params.deadline_s,
    )
    result = await corrective_answer(params.question, ports, settings, collection=params.collection)
    told = f"refused: {result.reason}" if result.refused else f"{len(result.citations)} citations"
    ctx.logger.info(
        "rag.answer: %s after %d model calls (%s, %d rewrites)",
        told,
        usage.calls,
        result.verdict.value,
        result.rewrites,
    )
    if result.web_error is not None:
        ctx.logger.warning(
            "rag.answer: the web search failed, read as finding nothing: %s", result.web_error
        )
    return SkillOutput(data={"rag": result.as_json()}, metrics=usage.metrics)
