"""``GET /knowledge`` and ``GET /knowledge/{name}/search``: what ``loopengine knowledge list``
and ``search`` print, with the API's bounds and error shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.test_chat import TOKEN, _start
from tests.daemon.conftest import Workspace
from tests.knowledge.conftest import GUIDE, write

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """A daemon whose collection ``docs`` was indexed by the command line (``notes`` never)."""
    root: Path = tmp_path_factory.mktemp("knowledge")
    write(root, GUIDE)
    config = (
        'daemon: {port: 0, token: "${ secret.API_TOKEN }"}\nknowledge:\n  docs: {sources: [kb]}\n'
        "  notes: {sources: [kb]}\n"
    )
    workspace, daemon, api = _start(root, config)
    try:
        workspace.cli("knowledge", "index", "docs")
        yield workspace, api
    finally:
        assert daemon.stop() == 0


def _get(api: str, path: str, **params: str) -> httpx.Response:
    return httpx.get(api + path, params=params, headers=HEADERS, timeout=10)


def test_the_collections_are_listed_as_the_command_lists_them(
    served: tuple[Workspace, str],
) -> None:
    workspace, api = served
    assert _get(api, "/knowledge").json() == workspace.json("knowledge", "list")


def test_a_search_answers_as_the_command_does(served: tuple[Workspace, str]) -> None:
    workspace, api = served
    answer = _get(api, "/knowledge/docs/search", q="install with apt", k="2")
    assert answer.status_code == 200
    assert answer.json() == workspace.json(
        "knowledge", "search", "docs", "install with apt", "--k", "2"
    )
    assert answer.json()["results"][0]["heading"] == "Install > Linux"


@pytest.mark.parametrize("query", ['"', "NEAR(", "AND OR", "*", "日本語"])
def test_a_hostile_query_finds_words_or_nothing(served: tuple[Workspace, str], query: str) -> None:
    assert _get(served[1], "/knowledge/docs/search", q=query).status_code == 200


def test_an_unknown_collection_is_404(served: tuple[Workspace, str]) -> None:
    answer = _get(served[1], "/knowledge/manuals/search", q="install")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {
            "code": "not_found",
            "message": "no knowledge collection 'manuals' (collections: docs, notes)",
        }
    }


def test_a_collection_never_indexed_is_404_saying_how_to_index_it(
    served: tuple[Workspace, str],
) -> None:
    answer = _get(served[1], "/knowledge/notes/search", q="install")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {
            "code": "not_found",
            "message": "collection 'notes' was never indexed: run `loopengine knowledge index "
            "notes`",
        }
    }


@pytest.mark.parametrize(
    "params",
    [{"q": "x" * 2001}, {"q": ""}, {"q": "install", "k": "0"}, {"q": "install", "k": "101"}, {}],
    ids=["long", "empty", "k0", "k101", "no q"],
)
def test_a_query_or_k_out_of_bounds_is_422(
    served: tuple[Workspace, str], params: dict[str, str]
) -> None:
    answer = _get(served[1], "/knowledge/docs/search", **params)
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "invalid"
