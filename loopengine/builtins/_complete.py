"""``llm.complete``: one prompt to the cluster, routed by category, answered as text or as JSON
that a JSON Schema accepts (one retry on an answer it refuses). The answer is untrusted: its
text is bounded, and so are the size and depth of the JSON read from it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, Field

from loopengine._json import JSON, JSONObject, NonFiniteNumber, loads
from loopengine.builtins._llm import Usage, llm_runtime
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, SkillOutput, skill

if TYPE_CHECKING:
    from loopengine.llm._client import Completion
    from loopengine.store.threads import ChatMessage

__all__ = ["MAX_ANSWER", "TRUNCATED", "complete", "conforming"]

MAX_ANSWER = 65_536
"""Most characters of an answer kept; a longer text answer is cut, a longer JSON one refused."""
TRUNCATED = "\n[… answer cut at 65536 characters]"
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL | re.IGNORECASE)
_SHOWN = 300
"""Most characters of a problem shown (a schema error quotes the untrusted answer)."""


def _valid_schema(schema: dict[str, object] | None) -> dict[str, object] | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if schema is None:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"schema is not a valid JSON Schema: {exc.message}") from None
    return schema


JSONSchema = Annotated[dict[str, object] | None, AfterValidator(_valid_schema)]
"""A JSON Schema (draft 2020-12), checked at ``validate`` when written as is."""


def conforming(text: str, schema: Mapping[str, Any]) -> tuple[JSON, str | None]:
    """The JSON value ``text`` holds (a code fence around it allowed) and None when ``schema``
    accepts it, else None and why not: too long, too deep, not JSON, or refused by the schema."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from loopengine.triggers import MAX_EVENT_DEPTH, nesting

    if len(text) > MAX_ANSWER:
        return None, f"the answer is over {MAX_ANSWER} characters"
    fenced = _FENCE.match(text.strip())
    body = fenced.group(1) if fenced else text
    try:
        value = loads(body, root="answer")
    except RecursionError:
        return None, f"the answer is nested more than {MAX_EVENT_DEPTH} levels"
    except NonFiniteNumber as exc:
        return None, str(exc)
    except ValueError as exc:
        return None, f"the answer is not JSON ({str(exc)[:_SHOWN]})"
    if nesting(value) > MAX_EVENT_DEPTH:
        return None, f"the answer is nested more than {MAX_EVENT_DEPTH} levels"
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return value, None
    where = "/".join(str(part) for part in error.absolute_path) or "the answer"
    return None, f"{where}: {error.message}"[:_SHOWN]


def _instructed(system: str | None, schema: Mapping[str, Any] | None) -> list[ChatMessage]:
    parts = [system] if system else []
    if schema is not None:
        parts.append(
            "Answer with one JSON value and nothing else (no prose, no code fence); it must "
            f"conform to this JSON Schema:\n{json.dumps(schema, ensure_ascii=False)}"
        )
    return [{"role": "system", "content": "\n\n".join(parts)}] if parts else []


@skill(
    "llm.complete",
    description="One prompt to the cluster, routed by `category`: the answer as text, or as JSON "
    "a `schema` accepts (validated, one retry on a non-conforming answer); tokens and calls "
    "count into the loop's budget.",
)
async def complete(
    ctx: SkillContext,
    prompt: str,
    system: str | None = None,
    category: str | None = None,
    max_tokens: Annotated[int | None, Field(ge=1, le=1_000_000)] = None,
    schema: JSONSchema = None,
    dry_run: bool = False,
) -> SkillOutput:
    """Args:
    prompt: What the model is asked.
    system: Instructions sent before the prompt.
    category: The routing category that picks the node (`default` when not given).
    max_tokens: Most tokens the answer may take.
    schema: A JSON Schema the answer must conform to; the answer is then read as JSON.
    """
    from loopengine.llm import DEFAULT_CATEGORY, parse_reply

    routed = category or DEFAULT_CATEGORY
    if dry_run or ctx.dry_run:
        asked = {"category": routed, "prompt": prompt, "system": system, "schema": schema}
        return SkillOutput(data={"completion": {**asked, "dry_run": True}})
    runtime = llm_runtime(ctx)
    node = runtime.cluster.pick(routed)
    if node is None:
        raise SkillError(f"llm.complete: no node of the cluster is available for {routed!r}")
    messages: list[ChatMessage] = [
        *_instructed(system, schema),
        {"role": "user", "content": prompt},
    ]
    usage = Usage(ctx, "llm.complete")

    async def ask() -> tuple[Completion, str]:
        completion = await runtime.cluster.chat(node, messages, max_tokens=max_tokens)
        usage.spend(completion.tokens, 1)
        return completion, parse_reply(completion.choice, ()).content

    completion, text = await ask()
    answer: JSONObject = {"category": routed, "node": node}
    if schema is not None:
        value, problem = conforming(text, schema)
        if problem is not None:
            usage.check(f"before a retry ({problem})")
            messages.append({"role": "assistant", "content": text[:MAX_ANSWER]})
            messages.append(
                {
                    "role": "user",
                    "content": f"That answer does not conform ({problem}). Answer again with "
                    "only the JSON value.",
                }
            )
            completion, text = await ask()
            value, again = conforming(text, schema)
            if again is not None:
                raise SkillError(
                    f"llm.complete: node {node}'s answer did not conform to the schema, twice: "
                    f"{again}"
                )
        answer["json"] = value
    answer.update(
        text=text[:MAX_ANSWER] + (TRUNCATED if len(text) > MAX_ANSWER else ""),
        truncated=len(text) > MAX_ANSWER,
        model=completion.model[:200],
        calls=usage.calls,
        tokens=usage.tokens,
    )
    return SkillOutput(data={"completion": answer}, metrics=usage.metrics)
