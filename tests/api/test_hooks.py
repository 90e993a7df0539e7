"""Webhooks on a real daemon: ``POST /hooks/{path}`` fires the loop whose webhook trigger has
that path, once per delivery id; the payload is the execution's ``trigger.data``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from loopengine.api._app import MAX_BODY
from loopengine.contract import MAX_WEBHOOK_BODY
from tests.daemon.conftest import Daemon, Workspace
from tests.waiting import DEADLINE_S

HOOK_SECRET = "whsec_" + base64.b64encode(b"thirty-two bytes of webhook key!").decode()
GITHUB_SECRET = "gh-hook-secret-42"
_RUNS = "concurrency: {max: 1, on_overlap: queue}\ndecide: {decision_tree: [], fallback_action: log_only}\n"
LOOPS = {
    "deployed": "trigger: {type: webhook, config: {path: deploy/done, secret: '${ secret.HOOK_SECRET }'}}",
    "pushed": "trigger: {type: webhook, config: {path: /github/push, style: github, secret: '${ secret.GITHUB_SECRET }'}}",
    "pushed_briefly": "trigger: {type: webhook, config: {path: github/brief, style: github, secret: '${ secret.GITHUB_SECRET }', tolerance_s: 1}}",
    "open_hook": "trigger: {type: webhook, config: {path: open, max_body_bytes: 1000}}",
    "unset": "trigger: {type: webhook, config: {path: unset, secret: '${ secret.NEVER_SET }'}}",
    "pausable": "trigger: {type: webhook, config: {path: pausable}}",
    "clash_a": "trigger: {type: webhook, config: {path: same}}",
    "clash_b": "trigger: {type: webhook, config: {path: same/}}",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, Daemon, str]]:
    """A daemon without a token serving the webhook loops of ``LOOPS``; its workspace, process
    and API URL."""
    root = tmp_path_factory.mktemp("hooks")
    (root / "loops").mkdir()
    for loop_id, trigger in LOOPS.items():
        (root / "loops" / f"{loop_id}.yaml").write_text(f"id: {loop_id}\n{trigger}\n{_RUNS}")
    (root / "loopengine.yaml").write_text("daemon: {port: 0}\n")
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}", "NO_COLOR": "1"}
    env |= {"HOOK_SECRET": HOOK_SECRET, "GITHUB_SECRET": GITHUB_SECRET}
    for name in ("LOOPENGINE_CONFIG", "LOOPENGINE_API_TOKEN", "NEVER_SET"):
        env.pop(name, None)
    workspace = Workspace(root, env)
    daemon = workspace.start()
    ready = daemon.wait_for(lambda line: line.get("kind") == "ready")
    try:
        yield workspace, daemon, str(ready["api"])
    finally:
        assert daemon.stop() == 0


def _standard(body: bytes, delivery: str, stamp: int | None = None) -> dict[str, str]:
    """Standard Webhooks headers signing ``body`` with ``HOOK_SECRET``."""
    stamp = int(time.time()) if stamp is None else stamp
    key = base64.b64decode(HOOK_SECRET.removeprefix("whsec_"))
    mac = hmac.digest(key, f"{delivery}.{stamp}.".encode() + body, hashlib.sha256)
    signature = "v1," + base64.b64encode(mac).decode()
    return {"webhook-id": delivery, "webhook-timestamp": str(stamp), "webhook-signature": signature}


def _github(body: bytes, delivery: str) -> dict[str, str]:
    signature = "sha256=" + hmac.digest(GITHUB_SECRET.encode(), body, hashlib.sha256).hex()
    return {"X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature}


def _post(url: str, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    headers = {"Content-Type": "application/json", **headers}
    return httpx.post(f"{url}/hooks/{path}", content=body, headers=headers, timeout=10)


def _deliver(url: str, payload: Any, delivery: str) -> httpx.Response:
    """``payload`` to ``deploy/done``, signed."""
    body = json.dumps(payload).encode()
    return _post(url, "deploy/done", body, _standard(body, delivery))


def _error(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, dict[str, Any]] = response.json()
    assert set(body) == {"error"}
    return body["error"]


def _ran(url: str, loop_id: str, delivery: str) -> dict[str, Any]:
    """The finished execution of ``delivery``, as ``GET /executions/{id}`` shows it."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        listed = httpx.get(f"{url}/executions", params={"loop_id": loop_id}, timeout=10).json()
        for row in listed["executions"]:
            if row["trigger"].get("delivery_id") == delivery and row["outcome"]:
                found: dict[str, Any] = httpx.get(
                    f"{url}/executions/{row['execution_id']}", timeout=10
                ).json()
                return found
        time.sleep(0.1)
    raise AssertionError(f"delivery {delivery} never ran {loop_id}")


def _deliveries(url: str, loop_id: str) -> list[str]:
    listed = httpx.get(f"{url}/executions", params={"loop_id": loop_id}, timeout=10).json()
    return [row["trigger"]["delivery_id"] for row in listed["executions"]]


def _raw(url: str, head: str) -> str:
    """The status line answering a request whose head is sent and whose body never is."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(head.encode() + b"\r\n\r\n")
        return connection.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def _head(path: str, length: int) -> str:
    return f"POST /hooks/{path} HTTP/1.1\r\nHost: test\r\nContent-Length: {length}"


def test_the_webhook_body_limit_is_the_api_body_limit() -> None:
    assert MAX_WEBHOOK_BODY == MAX_BODY


def test_a_signed_delivery_runs_the_loop_with_its_payload_as_trigger_data(
    served: tuple[Workspace, Daemon, str],
) -> None:
    url = served[2]
    payload = {"service": "api", "version": "1.4.2", "tags": ["blue", "green"]}
    response = _deliver(url, payload, "msg_first")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    trigger = _ran(url, "deployed", "msg_first")["trigger"]
    assert trigger == {
        "type": "webhook",
        "id": "webhook",
        "path": "deploy/done",
        "delivery_id": "msg_first",
        "data": payload,
    }


def test_a_replayed_delivery_answers_with_the_first_job_and_runs_nothing(
    served: tuple[Workspace, Daemon, str],
) -> None:
    url = served[2]
    first = _deliver(url, {"n": 1}, "msg_replayed")
    again = _deliver(url, {"n": 1}, "msg_replayed")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == {**first.json(), "status": "duplicate"}
    _ran(url, "deployed", "msg_replayed")
    assert _deliver(url, {"n": 2}, "msg_after").status_code == 202
    _ran(url, "deployed", "msg_after")
    assert _deliveries(url, "deployed").count("msg_replayed") == 1


def test_a_github_delivery_runs_the_loop(served: tuple[Workspace, Daemon, str]) -> None:
    url = served[2]
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    response = _post(url, "github/push", body, _github(body, delivery))
    assert response.status_code == 202
    assert response.json()["delivery_id"] == delivery
    assert _ran(url, "pushed", delivery)["trigger"]["data"] == {"ref": "refs/heads/main"}


def test_a_github_delivery_replayed_under_fresh_ids_runs_once(
    served: tuple[Workspace, Daemon, str],
) -> None:
    url = served[2]
    body = json.dumps({"ref": "refs/heads/replayed"}).encode()
    first = _post(url, "github/push", body, _github(body, "d-original"))
    replays = [_post(url, "github/push", body, _github(body, f"d-fresh-{n}")) for n in range(5)]
    assert first.status_code == 202
    assert [r.status_code for r in replays] == [200] * 5
    assert {r.json()["job_id"] for r in replays} == {first.json()["job_id"]}
    assert {r.json()["status"] for r in replays} == {"duplicate"}
    _ran(url, "pushed", "d-original")
    ran = _deliveries(url, "pushed")
    assert [d for d in ran if d.startswith("d-fresh-")] == []


def test_a_github_body_sent_again_after_the_hooks_tolerance_runs_again(
    served: tuple[Workspace, Daemon, str],
) -> None:
    url = served[2]
    body = json.dumps({"ref": "refs/heads/again"}).encode()
    assert _post(url, "github/brief", body, _github(body, "d-before")).status_code == 202
    deadline = time.monotonic() + 30
    sent = 0
    while (
        again := _post(url, "github/brief", body, _github(body, f"d-after-{sent}"))
    ).status_code == 200:
        assert time.monotonic() < deadline, "the body was held past the hook's tolerance"
        sent += 1
        time.sleep(0.2)
    assert again.status_code == 202
    _ran(url, "pushed_briefly", f"d-after-{sent}")


def test_an_unsigned_delivery_without_an_id_gets_a_new_one(
    served: tuple[Workspace, Daemon, str],
) -> None:
    response = _post(served[2], "open", b"[1, 2]", {})
    assert response.status_code == 202
    assert response.json()["delivery_id"]


def test_an_unsigned_delivery_is_named_by_its_webhook_id(
    served: tuple[Workspace, Daemon, str],
) -> None:
    response = _post(served[2], "open", b"{}", {"webhook-id": "msg_unsigned"})
    assert response.json()["delivery_id"] == "msg_unsigned"


def test_an_unsigned_delivery_to_a_signed_hook_is_a_401(
    served: tuple[Workspace, Daemon, str],
) -> None:
    response = _post(served[2], "deploy/done", b"{}", {})
    assert response.status_code == 401
    assert _error(response) == {"code": "unauthorized", "message": "missing header webhook-id"}


def test_a_delivery_signed_for_another_body_is_a_401(
    served: tuple[Workspace, Daemon, str],
) -> None:
    response = _post(served[2], "deploy/done", b"{}", _standard(b"[]", "msg_other_body"))
    assert response.status_code == 401
    assert "no v1 signature in webhook-signature matches" in _error(response)["message"]


def test_a_stale_delivery_is_a_401_saying_how_far_off(
    served: tuple[Workspace, Daemon, str],
) -> None:
    headers = _standard(b"{}", "msg_stale", int(time.time()) - 3600)
    response = _post(served[2], "deploy/done", b"{}", headers)
    assert response.status_code == 401
    assert "s in the past; accepted within ±300 s" in _error(response)["message"]


def test_a_github_delivery_signed_with_another_secret_is_a_401(
    served: tuple[Workspace, Daemon, str],
) -> None:
    headers = _github(b"{}", "d-1")
    headers["X-Hub-Signature-256"] = "sha256=" + "0" * 64
    assert _post(served[2], "github/push", b"{}", headers).status_code == 401


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"not json", "not JSON"),
        (b"[" * 50_000 + b"]" * 50_000, "nested more than 32"),
        (b'{"v": [NaN]}', "body.v.0: NaN is not a finite number"),
        (b'{"v": 1e999}', "body.v: 1e999 is not a finite number"),
    ],
)
def test_a_signed_body_that_is_not_bounded_json_is_a_422(
    served: tuple[Workspace, Daemon, str], body: bytes, said: str
) -> None:
    response = _post(served[2], "deploy/done", body, _standard(body, "msg_bad_body"))
    assert response.status_code == 422
    assert said in _error(response)["message"]


def test_an_unknown_path_is_a_404_before_the_body_is_read(
    served: tuple[Workspace, Daemon, str],
) -> None:
    assert _raw(served[2], _head("no/such/hook", 500)) == "HTTP/1.1 404 Not Found"


def test_a_body_over_a_mebibyte_is_a_413_before_it_is_read(
    served: tuple[Workspace, Daemon, str],
) -> None:
    status = _raw(served[2], _head("deploy/done", MAX_BODY + 1))
    assert status == "HTTP/1.1 413 Request Entity Too Large"


def test_a_body_over_the_hooks_own_limit_is_a_413_before_it_is_read(
    served: tuple[Workspace, Daemon, str],
) -> None:
    status = _raw(served[2], _head("open", 1001))
    assert status == "HTTP/1.1 413 Request Entity Too Large"


def test_another_method_is_a_405(served: tuple[Workspace, Daemon, str]) -> None:
    response = httpx.put(f"{served[2]}/hooks/open", content=b"{}", timeout=10)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_a_hook_whose_secret_is_not_set_is_refused_at_load_and_the_others_served(
    served: tuple[Workspace, Daemon, str],
) -> None:
    _, daemon, url = served
    logged = daemon.wait_for(lambda line: "$NEVER_SET" in line.get("message", ""))
    assert logged["kind"] == "error"
    rule = "webhook secret $NEVER_SET is not set: a webhook's secret must hold at least 16 bytes"
    assert rule in logged["message"]
    assert _post(url, "unset", b"{}", {}).status_code == 404
    assert _post(url, "open", b"{}", {}).status_code == 202


def test_a_paused_loop_runs_no_delivery(served: tuple[Workspace, Daemon, str]) -> None:
    url = served[2]
    assert httpx.post(f"{url}/loops/pausable/pause", timeout=10).status_code == 200
    try:
        response = _post(url, "pausable", b"{}", {})
        assert response.status_code == 409
        assert "the loop is paused" in _error(response)["message"]
    finally:
        httpx.post(f"{url}/loops/pausable/unpause", timeout=10)


def test_two_loops_on_one_path_the_first_serves_and_the_clash_is_logged(
    served: tuple[Workspace, Daemon, str],
) -> None:
    _, daemon, url = served
    logged = daemon.wait_for(lambda line: "/hooks/same" in line.get("message", ""))
    assert logged["kind"] == "error"
    assert "served by loop 'clash_a'" in logged["message"]
    assert "loop 'clash_b' (trigger 'webhook') claims it too" in logged["message"]
    assert _post(url, "same", b"{}", {}).json()["loop_id"] == "clash_a"
