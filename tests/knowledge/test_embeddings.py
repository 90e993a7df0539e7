"""Dense retrieval: chunks embedded by a node's ``/v1/embeddings`` (the scripted server on
127.0.0.1), stored beside them and fused with the keyword ranking; a node that fails leaves the
keywords alone."""

from __future__ import annotations

import itertools
import os
import random
import time
from array import array
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from loopengine.contract import Config
from loopengine.errors import LLMError
from loopengine.knowledge import index, search
from loopengine.knowledge._query import RRF_K, packed, similarity, unit
from loopengine.llm import Cluster
from loopengine.store import Store, knowledge
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


async def _many_vectors(store: Store, count: int, dimensions: int) -> None:
    """Collection ``docs`` of ``count`` chunks, each with a random vector of the model."""
    pieces = tuple(knowledge.Piece(n, "", f"chunk {n}") for n in range(count))
    files = [knowledge.FileChunks("kb/many.md", "digest", pieces)]
    await store.write(knowledge.replace_files, "docs", files, 0.0)
    await store.write(knowledge.use_embedding_model, "docs", f"OL1/{MODEL}")
    draw = random.Random(3)
    values = array("f", [draw.uniform(-1.0, 1.0) for _ in range(count * dimensions)]).tobytes()
    size = 4 * dimensions
    for first in range(1, count + 1, 1_000):
        rows = [
            (chunk, values[(chunk - 1) * size : chunk * size])
            for chunk in range(first, first + 1_000)
        ]
        await store.write(knowledge.put_vectors, "docs", rows)


async def test_the_event_loop_runs_on_while_many_vectors_are_scored(
    server: FakeLLMServer,
) -> None:
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.perf_counter())
            await anyio.sleep(0.001)

    config = _config(server)
    cluster = Cluster(config.cluster, os.environ)  # made once, as the engine's is
    try:
        async with memory_store() as store:
            await _many_vectors(store, 30_000, len(embedding("query")))
            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                started = time.perf_counter()
                found = await search(store, config, "docs", "xylophone", k=5, cluster=cluster)
                ended = time.perf_counter()
                group.cancel_scope.cancel()
    finally:
        await cluster.aclose()
    during = [started, *(at for at in ticks if started < at < ended), ended]
    longest = max(later - earlier for earlier, later in itertools.pairwise(during))
    assert len(found) == 5
    assert longest < (ended - started) / 4


async def test_the_nearest_vectors_are_found_across_pages(server: FakeLLMServer) -> None:
    async with memory_store() as store:
        await _many_vectors(store, 2_500, len(embedding("query")))
        found = await search(store, _config(server), "docs", "xylophone", k=5)
        stored = await store.read(knowledge.vectors, "docs", f"OL1/{MODEL}", 0, 10_000)
    query = unit(embedding("xylophone"))
    nearest = sorted(stored, key=lambda row: (-similarity(query, row[1]), row[0]))[:5]
    assert [chunk.position + 1 for chunk in found] == [chunk for chunk, _ in nearest]


async def test_vectors_are_read_a_page_at_a_time_of_their_own_collection_and_model() -> None:
    model = f"OL1/{MODEL}"
    async with memory_store() as store:
        for name, count in (("docs", 3), ("other", 2)):
            pieces = tuple(knowledge.Piece(n, "", "text") for n in range(count))
            files = [knowledge.FileChunks("kb/a.md", "digest", pieces)]
            await store.write(knowledge.replace_files, name, files, 0.0)
            await store.write(knowledge.use_embedding_model, name, model)
        rows = [(chunk, packed([float(chunk), 1.0])) for chunk in range(1, 6)]
        for name, chunks in (("docs", rows[:3]), ("other", rows[3:])):
            await store.write(knowledge.put_vectors, name, chunks)
        pages = [
            await store.read(knowledge.vectors, "docs", model, after, 2) for after in (0, 2, 3)
        ]
        other_model = await store.read(knowledge.vectors, "docs", "OL1/other", 0, 10)
    assert pages == [rows[:2], rows[2:3], []]
    assert other_model == []
