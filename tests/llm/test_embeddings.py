"""A node's ``/embeddings``: one finite vector per text, in order, within the node's deadline;
anything else is an ``LLMError``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from loopengine.errors import LLMError
from loopengine.llm import MAX_DIMENSIONS
from loopengine.testing import FakeLLMServer, embedding, hang, raw, status
from tests.llm.test_client import _client, http
from tests.otlp import spans

__all__ = ["http", "spans"]

pytestmark = pytest.mark.anyio


async def test_each_text_gets_its_vector_in_order(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    vectors = await _client(server, http).embed(["sky", "sea"], "e")
    assert vectors == [embedding("sky"), embedding("sea")]
    assert server.requests == [{"model": "e", "input": ["sky", "sea"]}]


async def test_vectors_are_put_in_the_order_of_their_index(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    answer = {
        "data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
    }
    server.script("e", [raw(answer)])
    assert await _client(server, http).embed(["a", "b"], "e") == [[1.0, 0.0], [0.0, 1.0]]


def _data(*vectors: Any) -> dict[str, Any]:
    return {"data": [{"index": n, "embedding": v} for n, v in enumerate(vectors)]}


@pytest.mark.parametrize(
    "answer",
    [
        _data([1.0]),
        _data([1.0], [1.0, 2.0]),
        _data([1.0], ["NaN"]),
        _data([1.0], [float("inf")]),
        _data([], []),
        _data([0.0] * (MAX_DIMENSIONS + 1), [0.0] * (MAX_DIMENSIONS + 1)),
        {"data": "vectors"},
        {"embeddings": []},
        _data({"x": 1}, [1.0]),
        {"data": [{"index": 1, "embedding": [1.0]}, {"index": 1, "embedding": [2.0]}]},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 2, "embedding": [2.0]}]},
        {"data": [{"index": "0", "embedding": [1.0]}, {"index": "1", "embedding": [2.0]}]},
    ],
    ids=[
        "one short",
        "two sizes",
        "nan",
        "infinite",
        "empty",
        "too long",
        "text",
        "no data",
        "map",
        "an index twice",
        "an index missing",
        "indexes as text",
    ],
)
async def test_an_unusable_answer_is_refused(
    server: FakeLLMServer, http: httpx.AsyncClient, answer: dict[str, Any]
) -> None:
    server.script("e", [raw(answer)])
    with pytest.raises(LLMError, match="node OL1 sent no usable embeddings for 2 texts"):
        await _client(server, http).embed(["a", "b"], "e")


async def test_a_failing_node_is_retried_then_answers(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("e", [status(503)])
    assert await _client(server, http).embed(["a"], "e") == [embedding("a")]


async def test_a_node_that_hangs_fails_at_its_deadline(
    server: FakeLLMServer, http: httpx.AsyncClient
) -> None:
    server.script("e", [hang(5)])
    with pytest.raises(LLMError, match=r"did not answer within 0\.5 s"):
        await _client(server, http, timeout_s=0.5).embed(["a"], "e")


async def test_an_embeddings_call_is_a_client_span_with_the_genai_attributes(
    server: FakeLLMServer, http: httpx.AsyncClient, spans: InMemorySpanExporter
) -> None:
    await _client(server, http).embed(["sky"], "e")
    [span] = spans.get_finished_spans()
    assert (span.name, span.kind) == ("embeddings e", SpanKind.CLIENT)
    assert span.attributes is not None
    assert span.attributes["gen_ai.operation.name"] == "embeddings"
    assert span.attributes["gen_ai.request.model"] == "e"
