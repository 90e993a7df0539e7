"""Dense retrieval: chunks embedded by a node's ``/v1/embeddings`` (the scripted server on
127.0.0.1), stored beside them and fused with the keyword ranking; a node that fails leaves the
keywords alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loopengine.contract import Config
from loopengine.errors import LLMError
from loopengine.knowledge import index, search
from loopengine.knowledge._query import RRF_K
from loopengine.store import knowledge
from loopengine.testing import (
    FakeLLMServer,
    Response,
    answering,
    embedding,
    memory_store,
    raw,
    status,
)
from tests.knowledge.conftest import GUIDE, config, write

pytestmark = pytest.mark.anyio
MODEL = "nomic-embed-text"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as started:
        yield started


def _config(server: FakeLLMServer, model: str = MODEL) -> Config:
    return Config.model_validate(
        {
            "cluster": {
                "nodes": {"OL1": {"base_url": server.base_url, "model": "m", "timeout_s": 5}}
            },
            "knowledge": {
                "docs": {"sources": ["kb"], "embeddings": {"node": "OL1", "model": model}}
            },
        }
    )


def _embedded_requests(server: FakeLLMServer) -> list[list[str]]:
    return [list(r["input"]) for r in server.requests_for(MODEL)]  # type: ignore[arg-type]


async def test_every_chunk_is_embedded_once(server: FakeLLMServer, tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        (first,) = await index(store, _config(server), tmp_path)
        (again,) = await index(store, _config(server), tmp_path)
        (summary,) = await store.read(knowledge.summaries)
    assert (first.embedded, again.embedded) == (4, 0)
    assert (summary.vectors, summary.embedding_model) == (4, f"OL1/{MODEL}")
    install = "Install\n\nRun the installer, then restart the daemon."  # heading, then text
    assert install in _embedded_requests(server)[0]


def _semantic(request: object) -> Response:
    """Vectors by meaning, not words: the sky chunk and a query about heavens are near."""
    texts = request["input"]  # type: ignore[index]
    vectors = [[1.0, 0.0] if ("sky" in t or "heavens" in t) else [0.0, 1.0] for t in texts]
    data = [{"index": n, "embedding": v} for n, v in enumerate(vectors)]
    return raw({"data": data})


async def test_the_nearest_vectors_find_what_no_keyword_does(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.script(MODEL, answering(_semantic))
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, _config(server), tmp_path)
        (best, *_) = await search(store, _config(server), "docs", "azure heavens", k=2)
    assert best.source == "kb/faq.txt"
    assert best.score == pytest.approx(1 / (RRF_K + 1), rel=1e-4)


async def test_a_chunk_both_rankings_put_first_leads_the_fusion(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, _config(server), tmp_path)
        found = await search(store, _config(server), "docs", "Rayleigh scattering sunlight", k=3)
    assert found[0].source == "kb/faq.txt"
    assert found[0].score == pytest.approx(2 / (RRF_K + 1), rel=1e-4)


async def test_a_node_down_at_query_time_leaves_the_keywords(
    server: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, _config(server), tmp_path)
        server.script(MODEL, [status(400, message="model not loaded")])
        found = await search(store, _config(server), "docs", "Rayleigh")
        keywords = await search(store, config(), "docs", "Rayleigh")
    assert found == keywords
    assert "searching by keywords alone: node OL1 answered 400: model not loaded" in caplog.text


async def test_a_node_down_at_index_time_keeps_the_chunks_and_embeds_them_next_time(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    write(tmp_path, GUIDE)
    server.script(MODEL, [status(400, message="model not loaded")])
    async with memory_store() as store:
        with pytest.raises(LLMError, match="model not loaded"):
            await index(store, _config(server), tmp_path)
        keywords = await search(store, _config(server), "docs", "Rayleigh")
        (report,) = await index(store, _config(server), tmp_path)
    assert [chunk.source for chunk in keywords] == ["kb/faq.txt"]
    assert (report.changed, report.embedded) == (0, 4)


async def test_another_model_replaces_every_vector(server: FakeLLMServer, tmp_path: Path) -> None:
    write(tmp_path, GUIDE)
    async with memory_store() as store:
        await index(store, _config(server), tmp_path)
        (report,) = await index(store, _config(server, "other-model"), tmp_path)
        (summary,) = await store.read(knowledge.summaries)
    assert report.embedded == 4
    assert summary.embedding_model == "OL1/other-model"


def test_the_scripted_server_embeds_texts_sharing_words_near() -> None:
    near = sum(
        a * b
        for a, b in zip(embedding("install the package"), embedding("package install"), strict=True)
    )
    far = sum(
        a * b for a, b in zip(embedding("install the package"), embedding("sky blue"), strict=True)
    )
    assert near > 0.8 > far
