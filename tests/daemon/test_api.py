"""The daemon's HTTP API on a real uvicorn server on 127.0.0.1: a bearer token on all but
/health, every error as {"error": {"code", "message"}}, the same records as the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon.conftest import BY_HAND, Daemon, Workspace

TOKEN = "s3cret-api-token-42"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """A daemon with a token, serving the manual loop ``by_hand``; its workspace and API URL."""
    root = tmp_path_factory.mktemp("api")
    (root / "loops").mkdir()
    (root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    (root / "loopengine.yaml").write_text('daemon: {port: 0, token: "${ secret.API_TOKEN }"}\n')
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    env["API_TOKEN"] = TOKEN
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    workspace = Workspace(root, env)
    daemon: Daemon = workspace.start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    try:
        yield workspace, str(ready["api"])
    finally:
        assert daemon.stop() == 0


def _get(url: str, path: str, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(url + path, headers=headers, timeout=10)


def _error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]


def test_the_api_listens_on_loopback(served: tuple[Workspace, str]) -> None:
    assert served[1].startswith("http://127.0.0.1:")


def test_health_answers_without_a_token(served: tuple[Workspace, str]) -> None:
    response = _get(served[1], "/health", token=None)
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x"])
def test_other_endpoints_need_the_token(served: tuple[Workspace, str], token: str | None) -> None:
    response = _get(served[1], "/status", token=token)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert _error(response)["code"] == "unauthorized"


def test_status_is_what_the_status_command_prints(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    response = _get(url, "/status")
    assert response.status_code == 200
    body = response.json()
    assert [loop["loop_id"] for loop in body["loops"]] == ["by_hand"]
    assert body["daemons"] == workspace.json("status")["daemons"]


def test_an_execution_is_the_record_show_prints(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    done = workspace.json("trigger", "by_hand", "--wait")
    response = _get(url, f"/executions/{done['execution_id']}")
    assert response.status_code == 200
    assert response.json() == workspace.json("show", done["execution_id"])


@pytest.mark.parametrize("path", ["/executions/nope", "/no/such/endpoint"])
def test_what_does_not_exist_is_a_404_in_the_error_shape(
    served: tuple[Workspace, str], path: str
) -> None:
    response = _get(served[1], path)
    assert response.status_code == 404
    assert _error(response)["code"] == "not_found"


def test_the_openapi_document_lists_the_endpoints(served: tuple[Workspace, str]) -> None:
    paths = _get(served[1], "/openapi.json").json()["paths"]
    assert {"/health", "/status", "/executions/{execution_id}"} <= set(paths)


def test_a_non_loopback_address_without_a_token_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loops").mkdir()
    (tmp_path / "loopengine.yaml").write_text("daemon: {host: 0.0.0.0, port: 0}\n")
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}"}
    env.pop("LOOPENGINE_CONFIG", None)
    env.pop("LOOPENGINE_API_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "loopengine", "daemon", "loops"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: daemon.host '0.0.0.0' is not a loopback address and no token is set: set "
        "daemon.token (or LOOPENGINE_API_TOKEN), or listen on 127.0.0.1"
    ]


def _post(url: str, path: str) -> httpx.Response:
    return httpx.post(url + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)


def test_loops_are_the_ones_served(served: tuple[Workspace, str]) -> None:
    url = served[1]
    assert [loop["loop_id"] for loop in _get(url, "/loops").json()["loops"]] == ["by_hand"]
    assert _get(url, "/loops/by_hand").json()["loop_id"] == "by_hand"
    assert _error(_get(url, "/loops/nope"))["code"] == "not_found"


def test_pausing_a_loop_is_what_pause_does(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    first, again = _post(url, "/loops/by_hand/pause"), _post(url, "/loops/by_hand/pause")
    assert first.json() == {"loop_id": "by_hand", "state": "paused", "changed": True}
    assert again.json()["changed"] is False
    assert workspace.json("status")["loops"][0]["paused"] is True
    assert _post(url, "/loops/by_hand/unpause").json()["state"] == "active"
    assert _error(_post(url, "/loops/nope/pause"))["code"] == "not_found"


def test_executions_are_what_history_lists(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    workspace.json("trigger", "by_hand", "--wait")
    listed = _get(url, "/executions?loop_id=by_hand&limit=5").json()
    assert listed == workspace.json("history", "by_hand", "--limit", "5")


@pytest.mark.parametrize("query", ["outcome=bogus", "limit=0", "limit=10001", "limit=x"])
def test_a_bad_filter_is_a_422_in_the_error_shape(
    served: tuple[Workspace, str], query: str
) -> None:
    response = _get(served[1], f"/executions?{query}")
    assert response.status_code == 422
    assert _error(response)["code"] == "invalid"
