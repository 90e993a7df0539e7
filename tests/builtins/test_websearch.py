"""The web fallback of ``rag.answer``: the query added to the endpoint's URL, its JSON results
read as bounded passages, and an endpoint that fails or floods refused with why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from loopengine.builtins._websearch import (
    MAX_RESULTS,
    MAX_TEXT,
    search_url,
    web_passages,
    web_search,
)
from loopengine.contract import WebFallback
from loopengine.errors import SkillError
from tests.builtins.http_server import HostileServer, serving


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with serving() as running:
        yield running


def test_the_query_joins_the_urls_own_parameters_in_its_param() -> None:
    assert search_url("https://s.example/search?format=json&q=old", "q", "reset & pair") == (
        "https://s.example/search?format=json&q=reset+%26+pair"
    )


def test_results_with_a_text_and_a_url_are_passages_in_their_order() -> None:
    body = json.dumps(
        {
            "results": [
                {"url": "https://a.example/", "title": "A", "content": "First."},
                {"url": "https://b.example/"},
                "not an object",
                {"source": "https://c.example/", "heading": "C", "text": "Third."},
            ]
        }
    )
    found = [(c.source, c.heading, c.position, c.text) for c in web_passages(body)]
    assert found == [
        ("https://a.example/", "A", 0, "First."),
        ("https://c.example/", "C", 3, "Third."),
    ]


def test_results_are_read_bounded() -> None:
    item = {"url": "https://a.example/" + "p" * 1_000, "title": "t" * 1_000, "content": "x" * 10**6}
    found = web_passages(json.dumps({"results": [item] * (MAX_RESULTS * 5)}))
    assert len(found) == MAX_RESULTS
    assert (len(found[0].source), len(found[0].heading), len(found[0].text)) == (300, 300, MAX_TEXT)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("<html>", 'answered no JSON: expected {"results": [...]}'),
        ("[" * 100_000 + "]" * 100_000, 'answered no JSON: expected {"results": [...]}'),
        ('{"hits": []}', 'answered JSON without a "results" list'),
        ('{"results": {"url": "x"}}', 'answered JSON without a "results" list'),
    ],
    ids=["html", "too-deep", "no-results", "results-not-a-list"],
)
def test_an_answer_that_is_no_search_result_says_what_it_is(body: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        web_passages(body)


@pytest.mark.anyio
async def test_an_endpoint_answering_an_error_fails_worth_retrying(server: HostileServer) -> None:
    web = WebFallback(url=server.url("/status/503"))
    with pytest.raises(SkillError, match="answered 503") as caught:
        await web_search(web, [f"127.0.0.1:{server.port}"], "reset")
    assert caught.value.retryable is True


@pytest.mark.anyio
async def test_an_endpoint_that_floods_is_cut_and_refused(server: HostileServer) -> None:
    web = WebFallback(url=server.url("/flood"))
    with pytest.raises(SkillError, match="the web search answered over 65,536 bytes"):
        await web_search(web, [f"127.0.0.1:{server.port}"], "reset")


@pytest.mark.anyio
async def test_an_endpoint_answering_prose_is_refused(server: HostileServer) -> None:
    web = WebFallback(url=server.url("/plain"))
    with pytest.raises(SkillError, match="the web search answered no JSON"):
        await web_search(web, [f"127.0.0.1:{server.port}"], "reset")
