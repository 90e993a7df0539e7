"""The corrective pipeline's orchestrator: retrieve, grade, rewrite, search the web, refine and
answer, over injected async callables (the ports) and bounded in model calls and time, so the
pure decisions run the same against an index and a model as against plain functions in a test."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

import anyio

from loopengine._concurrency import run_all
from loopengine._json import JSONObject
from loopengine.errors import SkillError
from loopengine.knowledge.corrective._prompts import (
    PromptMessage,
    answer_messages,
    refusal_text,
    retry_messages,
)
from loopengine.knowledge.corrective._reading import (
    MAX_QUERY,
    Checked,
    Citation,
    read_answer,
    read_grade,
    read_rewrite,
)
from loopengine.knowledge.corrective._refining import (
    ChunkLike,
    Evidence,
    Graded,
    chunk_key,
    refine,
)
from loopengine.knowledge.corrective._settings import CragSettings
from loopengine.knowledge.corrective._verdicts import Verdict, verdict

__all__ = [
    "AnswerCall",
    "CragResult",
    "GradeCall",
    "Ports",
    "Retrieve",
    "RewriteCall",
    "WebSearch",
    "corrective_answer",
    "unasked",
]


@dataclass(frozen=True, slots=True)
class CragResult:
    """What the pipeline did: an answer with its citations and the evidence it was given, or a
    refusal whose ``answer`` says what was searched and ``reason`` why (``""`` when answered).
    ``verdict`` is the knowledge base's; ``web`` says whether the web was searched too, and
    ``web_error`` why that search failed (None when it did not)."""

    answer: str
    citations: tuple[Citation, ...]
    refused: bool
    reason: str
    verdict: Verdict
    rewrites: int
    grades: tuple[Graded, ...]
    queries: tuple[str, ...]
    calls: int
    web: bool
    web_error: str | None
    evidence: tuple[Evidence, ...]

    def as_json(self) -> JSONObject:
        """The result as a skill returns it."""
        return {
            "answer": self.answer,
            "citations": [c.as_json() for c in self.citations],
            "refused": self.refused,
            "reason": self.reason,
            "verdict": self.verdict.value,
            "rewrites": self.rewrites,
            "grades": [g.as_json() for g in self.grades],
            "queries": list(self.queries),
            "calls": self.calls,
            "web": self.web,
            "web_error": self.web_error,
            "evidence": [e.as_json() for e in self.evidence],
        }


def unasked(question: str, collection: str) -> JSONObject:
    """The result, as a skill returns it, of a question the pipeline is not run on (a dry run):
    the keys of an answer's, refused and without a verdict, saying what would be searched."""
    said = f'"{question[:MAX_QUERY]}" would be answered from {collection!r}'
    shape = CragResult(
        f"Dry run: no model was asked. {said}.",
        citations=(),
        refused=True,
        reason="a dry run asks no model",
        verdict=Verdict.INCORRECT,
        rewrites=0,
        grades=(),
        queries=(),
        calls=0,
        web=False,
        web_error=None,
        evidence=(),
    )
    return {
        **shape.as_json(),
        "verdict": None,
        "dry_run": True,
        "question": question,
        "collection": collection,
    }


Retrieve = Callable[[str, int], Awaitable[Sequence[ChunkLike]]]
"""At most ``k`` chunks for a query, best first."""
GradeCall = Callable[[str, ChunkLike], Awaitable[str]]
"""The grader's raw reply on (question, chunk); ``grade_messages`` is its prompt."""
RewriteCall = Callable[[str, Sequence[str]], Awaitable[str]]
"""The rewriter's raw reply on (question, queries tried); ``rewrite_messages`` is its prompt."""
AnswerCall = Callable[[Sequence[PromptMessage]], Awaitable[str]]
"""The answering model's raw reply to the messages."""
WebSearch = Callable[[str], Awaitable[Sequence[ChunkLike] | None]]
"""Chunks found on the web for a query (None: nothing found); a ``SkillError`` says the search
failed, which the pipeline reads as finding nothing."""


@dataclass(frozen=True, slots=True)
class Ports:
    """The pipeline's collaborators; ``web`` None means an incorrect retrieval is refused."""

    retrieve: Retrieve
    grade: GradeCall
    rewrite: RewriteCall
    answer: AnswerCall
    web: WebSearch | None = None


class _OutOfCalls(Exception):
    """The model-call bound was reached."""


class _Run:
    """One question's way through the pipeline; what it learned stays when a bound stops it."""

    def __init__(self, question: str, ports: Ports, settings: CragSettings, collection: str):
        self.question, self.ports, self.settings = question, ports, settings
        self.collection = collection
        self.queries: list[str] = []
        self.graded: list[Graded] = []
        self.calls = self.rewrites = 0
        self.verdict = Verdict.INCORRECT
        self.web = False
        self.web_error: str | None = None

    def spend(self) -> None:
        if self.calls >= self.settings.call_bound:
            raise _OutOfCalls
        self.calls += 1

    async def run(self) -> CragResult:
        await self.search(self.question)
        while self.verdict is not Verdict.CORRECT and self.rewrites < self.settings.max_rewrites:
            query = await self.rewritten()
            if query is None:
                break
            await self.search(query)
        if self.verdict is Verdict.INCORRECT and self.ports.web is not None:
            await self.search_web(self.ports.web, self.queries[-1])
        evidence = refine(self.graded, self.queries, self.settings)
        if not evidence:
            above = f"graded above {self.settings.thresholds.lower:g}"
            if not self.web:
                return self.refused(f"the knowledge base held no passage {above}")
            if self.web_error is not None:
                return self.refused(
                    f"the knowledge base held no passage {above}, and the web search failed"
                )
            return self.refused(f"neither the knowledge base nor the web held a passage {above}")
        return await self.answered(evidence)

    async def search_web(self, web: WebSearch, query: str) -> None:
        """Grade what the web finds for ``query``; a search that fails found nothing (why is
        kept), so the knowledge base's verdict stands."""
        self.web = True
        try:
            found = await web(query)
        except SkillError as exc:
            self.web_error = str(exc)
            return
        await self.grade_all(found or (), query, web=True)

    async def rewritten(self) -> str | None:
        """The next query; None when the rewrite is unusable or was already tried."""
        self.spend()
        self.rewrites += 1
        query = read_rewrite(await self.ports.rewrite(self.question, tuple(self.queries)))
        tried = {q.casefold() for q in self.queries}
        return None if query is None or query.casefold() in tried else query

    async def search(self, query: str) -> None:
        self.queries.append(query)
        found = await self.ports.retrieve(query, self.settings.k)
        await self.grade_all(found, query, web=False)
        internal = (g.grade for g in self.graded if not g.web)
        self.verdict = verdict(internal, self.settings.thresholds)

    async def grade_all(self, found: Iterable[ChunkLike], query: str, *, web: bool) -> None:
        """Grade the chunks not graded yet (at most ``k``), side by side, kept in their order."""
        seen = {chunk_key(g.chunk) for g in self.graded}
        chunks = [c for c in islice(found, self.settings.k) if chunk_key(c) not in seen]
        grades = [0.0] * len(chunks)
        limiter = anyio.CapacityLimiter(self.settings.concurrency)

        def task(index: int) -> Callable[[], Coroutine[None, None, None]]:
            async def grade_one() -> None:
                async with limiter:
                    self.spend()
                    grades[index] = read_grade(await self.ports.grade(self.question, chunks[index]))

            return grade_one

        await run_all([task(i) for i in range(len(chunks))])
        self.graded += [Graded(c, g, query, web) for c, g in zip(chunks, grades, strict=True)]

    async def answered(self, evidence: tuple[Evidence, ...]) -> CragResult:
        """The answer when its citations hold, after one retry told why; else a refusal."""
        messages = answer_messages(self.question, evidence)
        checked = await self.ask(messages, evidence)
        if checked.problem is not None:
            retry = retry_messages(messages, checked.text, checked.problem, len(evidence))
            checked = await self.ask(retry, evidence)
        if checked.problem is not None:
            return self.refused(f"the answer {checked.problem}, twice")
        return self.result(checked.text, checked.citations, "", evidence)

    async def ask(self, messages: Sequence[PromptMessage], evidence: Sequence[Evidence]) -> Checked:
        self.spend()
        return read_answer(await self.ports.answer(messages), evidence)

    def refused(self, why: str) -> CragResult:
        best = max((g.grade for g in self.graded), default=None)
        text = refusal_text(why, self.collection, self.queries, best)
        return self.result(text, (), why, ())

    def result(
        self, text: str, citations: tuple[Citation, ...], why: str, evidence: tuple[Evidence, ...]
    ) -> CragResult:
        return CragResult(
            answer=text,
            citations=citations,
            refused=bool(why),
            reason=why,
            verdict=self.verdict,
            rewrites=self.rewrites,
            grades=tuple(self.graded),
            queries=tuple(self.queries),
            calls=self.calls,
            web=self.web,
            web_error=self.web_error,
            evidence=evidence,
        )


async def corrective_answer(
    question: str, ports: Ports, settings: CragSettings, *, collection: str
) -> CragResult:
    """Answer ``question`` from ``collection`` with cited evidence, or refuse saying what was
    searched; a reached call bound or deadline is a refusal that says so."""
    run = _Run(question, ports, settings, collection)
    with anyio.move_on_after(settings.deadline_s):
        try:
            return await run.run()
        except _OutOfCalls:
            return run.refused(f"the bound of {settings.call_bound} model calls was reached")
    return run.refused(f"the deadline of {settings.deadline_s:g} s passed")
