"""The web fallback of ``rag.answer`` (a collection's ``web:``): one GET to a search endpoint that
``actions.http.allow`` lists, sent as ``http.request`` sends (each address checked, redirects
checked again, the body bounded), its JSON results read as passages. The answer is untrusted:
its size, depth, number of results and their texts are bounded."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from loopengine._hosts import Allowed, unlisted
from loopengine._json import loads
from loopengine.builtins._http import MAX_BODY, Request, _answered, _check_status
from loopengine.contract import WebFallback
from loopengine.errors import SkillError
from loopengine.knowledge import Chunk

__all__ = ["MAX_RESULTS", "MAX_TEXT", "search_url", "web_passages", "web_search", "web_searcher"]

MAX_RESULTS = 20
"""Most results of one answer read."""
MAX_TEXT = 4_000
"""Characters of a result's text kept."""
_MAX_REF = 300
"""Characters of a result's URL and title kept."""
_SETTING = "actions.http.allow"


def search_url(url: str, param: str, query: str) -> str:
    """``url`` with ``query`` added as its ``param`` query parameter (any other kept)."""
    parts = urlsplit(url)
    kept = [(name, value) for name, value in parse_qsl(parts.query) if name != param]
    return urlunsplit(parts._replace(query=urlencode([*kept, (param, query)])))


def _field(item: dict[str, object], *names: str) -> str:
    """The first of ``names`` that holds text in ``item``, else ``""``."""
    return next((v.strip() for n in names if isinstance(v := item.get(n), str) and v.strip()), "")


def web_passages(body: str) -> list[Chunk]:
    """The passages a search endpoint answered: the first ``MAX_RESULTS`` of its ``results``
    that hold a text and a URL, each bounded; ``ValueError`` saying what else it answered."""
    try:
        document = loads(body, root="answer")
    except (ValueError, RecursionError):
        raise ValueError('answered no JSON: expected {"results": [...]}') from None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        raise ValueError('answered JSON without a "results" list')
    found = []
    for position, item in enumerate(results[:MAX_RESULTS]):
        if not isinstance(item, dict):
            continue
        text, source = _field(item, "text", "content"), _field(item, "url", "source")
        if text and source:
            heading = _field(item, "title", "heading")[:_MAX_REF]
            found.append(Chunk(source[:_MAX_REF], heading, position, text[:MAX_TEXT], 0.0))
    return found


def web_searcher(web: WebFallback, allow: Sequence[str]) -> Callable[[str], Awaitable[list[Chunk]]]:
    """``web_search`` of ``web``'s endpoint, for the pipeline; ``SkillError`` at once when
    ``actions.http.allow`` does not list it (questions leave for it)."""
    if (problem := unlisted(web.url, allow, _SETTING)) is not None:
        raise SkillError(f"rag.answer: the web search {problem}")
    return partial(web_search, web, tuple(allow))


async def web_search(web: WebFallback, allow: Sequence[str], query: str) -> list[Chunk]:
    """The passages ``web``'s endpoint finds for ``query``, each address it reaches checked
    against ``allow``; ``SkillError`` when it fails (retryable for a network failure, a timeout,
    429 and 5xx) or answers otherwise than with search results."""
    request = Request(
        "rag.answer",
        "GET",
        search_url(web.url, web.param, query),
        {"accept": "application/json"},
        None,
        {},
        web.timeout_s,
    )
    reply, _ = await _answered(request, Allowed(tuple(allow), f"{_SETTING} in loopengine.yaml"))
    _check_status(request, reply)
    if reply.truncated:
        raise SkillError(f"rag.answer: the web search answered over {MAX_BODY:,} bytes")
    try:
        return web_passages(reply.text)
    except ValueError as exc:
        raise SkillError(f"rag.answer: the web search {exc}") from None
