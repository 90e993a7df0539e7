"""The daemon's HTTP API on a real uvicorn server on 127.0.0.1: a bearer token on all but
/health, every error as {"error": {"code", "message"}}, the same records as the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from loopengine.api._app import MAX_BODY
from tests.conftest import ROOT
from tests.daemon.conftest import BY_HAND, ON_EVENT, Workspace, serving
from tests.waiting import wait_until

TOKEN = "s3cret-api-token-42"
COUNTED = """\
id: counted
trigger: {type: manual}
concurrency: {on_overlap: queue, max_queue: 1000}
params: {n: {type: integer, default: 1}}
decide: {decision_tree: [], fallback_action: log_only}
"""
GATED = """\
id: gated
trigger: {type: manual}
params: {n: {type: integer, default: 1}}
decide:
  decision_tree: [{condition: "input.n > `5`", action: big}]
  fallback_action: log_only
  human_approval: {required_for: [big]}
act:
  actions: [{action_id: big, skill_id: log_only, on: [big], params: {message: "big one"}}]
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """A daemon with a token, serving the manual loops ``by_hand`` and ``counted`` (a param
    ``n``; a trigger queues behind a job of a test before, however slow the machine); its
    workspace and API URL."""
    loops = {"by_hand.yaml": BY_HAND, "counted.yaml": COUNTED, "gated.yaml": GATED}
    with serving(tmp_path_factory.mktemp("api"), loops, TOKEN) as started:
        yield started


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
    assert [loop["loop_id"] for loop in body["loops"]] == ["by_hand", "counted", "gated"]
    assert body["daemons"] == workspace.json("status")["daemons"]


def test_an_execution_is_the_record_show_prints(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    done = workspace.json("trigger", "by_hand", "--wait")
    response = _get(url, f"/executions/{done['execution_id']}")
    assert response.status_code == 200
    assert response.json() == workspace.json("show", done["execution_id"])


def test_an_execution_s_log_is_what_the_logs_command_prints(
    served: tuple[Workspace, str],
) -> None:
    workspace, url = served
    done = workspace.json("trigger", "counted", "--wait")
    response = _get(url, f"/executions/{done['execution_id']}/logs")
    assert response.status_code == 200
    assert response.json() == workspace.json("logs", done["execution_id"])
    assert response.json()["lines"][0]["message"] == "loop counted decided 'log_only'"
    after = response.json()["after"]
    following = _get(url, f"/executions/{done['execution_id']}/logs?after={after}").json()
    assert (following["lines"], following["after"]) == ([], after)


@pytest.mark.parametrize("query", ["after=-1", "after=9007199254740993", "limit=0", "limit=1001"])
def test_a_log_read_out_of_bounds_is_a_422(served: tuple[Workspace, str], query: str) -> None:
    workspace, url = served
    done = workspace.json("trigger", "counted", "--wait")
    response = _get(url, f"/executions/{done['execution_id']}/logs?{query}")
    assert response.status_code == 422
    assert _error(response)["code"] == "invalid"


@pytest.mark.parametrize("path", ["/executions/nope", "/executions/nope/logs", "/no/such/endpoint"])
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
    listed = _get(url, "/loops").json()["loops"]
    assert [loop["loop_id"] for loop in listed] == ["by_hand", "counted", "gated"]
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
    listed = _get(url, "/executions?loop_id=by_hand&limit=5").json()["executions"]
    assert listed == workspace.json("history", "by_hand", "--limit", "5")["executions"]


def test_executions_are_listed_page_by_page(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    for _ in range(3):
        workspace.json("trigger", "by_hand", "--wait")
    everything = _get(url, "/executions?loop_id=by_hand").json()["executions"]
    pages, query = [], "/executions?loop_id=by_hand&limit=1"
    while query:
        page = _get(url, query).json()
        pages.extend(page["executions"])
        cursor = page["next_cursor"]
        query = f"/executions?loop_id=by_hand&limit=1&cursor={cursor}" if cursor else ""
    assert pages == everything


@pytest.mark.parametrize(
    "query", ["outcome=bogus", "limit=0", "limit=10001", "limit=x", "cursor=nope"]
)
def test_a_bad_filter_is_a_422_in_the_error_shape(
    served: tuple[Workspace, str], query: str
) -> None:
    response = _get(served[1], f"/executions?{query}")
    assert response.status_code == 422
    assert _error(response)["code"] == "invalid"


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _post_json(url: str, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}", **kwargs.pop("headers", {})}
    return httpx.post(url + path, json=body, headers=headers, timeout=10, **kwargs)


@pytest.fixture(scope="module")
def on_events(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    """A daemon without a token serving ``on_event`` (``seo.page.*`` whose ``data.page > 0``)
    and the shipped ``autotune``."""
    autotune = (ROOT / "loops" / "autotune.yaml").read_text()
    loops = {"on_event.yaml": ON_EVENT, "autotune.yaml": autotune}
    with serving(tmp_path_factory.mktemp("events"), loops, None) as started:
        yield started


def test_an_event_posted_is_logged_and_fires_the_loops_it_matches(
    on_events: tuple[Workspace, str],
) -> None:
    workspace, url = on_events
    response = _post_json(url, "/events", {"name": "seo.page.updated", "data": {"page": 3}})
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["matched"] == ["on_event"]
    assert workspace.json("events", "list")["events"][0]["id"] == accepted["id"]
    wait_until(lambda: workspace.json("history", "on_event")["executions"], "the event never ran")


def test_an_event_its_filter_refuses_matches_nothing(on_events: tuple[Workspace, str]) -> None:
    accepted = _post_json(
        on_events[1], "/events", {"name": "seo.page.updated", "data": {"page": 0}}
    )
    assert accepted.json()["matched"] == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "no spaces allowed"}, 422),
        ({"name": "a.b", "data": [1]}, 422),
        ({"data": {}}, 422),
        ({"name": "a.b", "data": {"x": _nested(40)}}, 422),
        ({"name": "a.b", "data": {"x": "y" * 70_000}}, 413),
    ],
)
def test_a_bad_event_is_refused_in_the_error_shape(
    on_events: tuple[Workspace, str], body: Any, status: int
) -> None:
    response = _post_json(on_events[1], "/events", body)
    assert response.status_code == status
    assert _error(response)["code"] in ("invalid", "too_large")


def test_an_events_data_is_measured_in_utf8_bytes_as_emit_measures_it(
    on_events: tuple[Workspace, str],
) -> None:
    """60,000 bytes in UTF-8; escaped as ASCII it would be 180,000."""
    body = {"name": "a.noted", "data": {"text": "é" * 30_000}}
    assert _post_json(on_events[1], "/events", body).status_code == 202


def test_without_a_token_a_request_naming_another_host_is_misdirected(
    on_events: tuple[Workspace, str],
) -> None:
    """A page whose name was rebound to 127.0.0.1 (DNS rebinding) names its own host."""
    response = httpx.get(on_events[1] + "/loops", headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 421
    assert "set daemon.token to serve 'evil.example'" in _error(response)["message"]


def test_without_a_token_a_change_asked_by_a_page_of_another_site_is_refused(
    on_events: tuple[Workspace, str],
) -> None:
    """A form posted cross-site carries no token, and needs none to be sent."""
    url = on_events[1]
    response = httpx.post(
        url + "/loops/on_event/pause",
        headers={"Origin": "https://evil.example"},
        data={"x": "1"},
        timeout=10,
    )
    assert response.status_code == 403
    assert _error(response)["code"] == "forbidden"
    assert httpx.get(url + "/loops/on_event", timeout=10).json()["paused"] is False


def _post_raw(url: str, content: bytes | Iterator[bytes]) -> httpx.Response:
    """An event posted as bytes (or chunks) without a token: the body is what is tested."""
    headers = {"Content-Type": "application/json"}
    return httpx.post(url + "/events", content=content, headers=headers, timeout=10)


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    on_events: tuple[Workspace, str],
) -> None:
    huge = b'{"name": "a.b", "data": {"x": "' + b"y" * (MAX_BODY + 1) + b'"}}'
    response = _post_raw(on_events[1], huge)
    assert response.status_code == 413


def test_a_chunked_body_over_the_limit_is_refused(on_events: tuple[Workspace, str]) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "a.b", "data": {"x": "'
        for _ in range(MAX_BODY // 65_536 + 2):
            yield b"y" * 65_536
        yield b'"}}'

    response = _post_raw(on_events[1], chunks())
    assert response.status_code == 413


def test_deep_json_is_refused_not_crashed_on(on_events: tuple[Workspace, str]) -> None:
    deep = b'{"name": "a.b", "data": {"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}"
    response = _post_raw(on_events[1], deep)
    assert response.status_code == 400
    assert _error(response)["code"] == "bad_request"


_TOOL_CALL = '{"id": "c1", "function": {"name": "f", "arguments": {"x": [1, NaN]}}}'


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/events", '{"name": "seo.page.updated", "data": {"page": NaN}}', "body.data.page"),
        ("/loops/by_hand/trigger", '{"inputs": {"limit": Infinity}}', "body.inputs.limit"),
        ("/loops/by_hand/trigger", '{"inputs": {"limit": -1e999}}', "body.inputs.limit"),
        ("/chat", '{"message": "hi", "temperature": NaN}', "body.temperature"),
        (
            "/v1/chat/completions",
            '{"model": "loopengine-simple", "messages": [{"role": "user", "content": "hi"}], '
            '"temperature": -Infinity}',
            "body.temperature",
        ),
        (
            "/sessions/s-nan/messages/batch",
            '{"messages": [{"role": "assistant", "tool_calls": [' + _TOOL_CALL + "]}]}",
            "body.messages.0.tool_calls.0.function.arguments.x.1",
        ),
        ("/approvals/0123456789abcdef", '{"decision": "approve", "note": NaN}', "body.note"),
    ],
)
def test_a_number_json_cannot_carry_is_a_422_naming_where_it_stands(
    served: tuple[Workspace, str], path: str, body: str, where: str
) -> None:
    headers = {"Content-Type": "application/json", "If-Match": '"0"', "Idempotency-Key": "k"}
    response = _post_json(served[1], path, content=body.encode(), headers=headers)
    assert response.status_code == 422
    error = _error(response)
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"{where}: ")
    assert "is not a finite number" in error["message"]


def test_a_trigger_queues_a_job_the_daemon_runs(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    response = _post_json(url, "/loops/counted/trigger", {"inputs": {"n": 4}})
    assert response.status_code == 202
    job = response.json()
    assert (job["loop_id"], job["status"]) == ("counted", "queued")
    wait_until(lambda: workspace.json("history", "counted")["executions"], "the job never ran")


def test_a_repeated_idempotency_key_answers_with_the_first_job(
    served: tuple[Workspace, str],
) -> None:
    url, key = served[1], {"Idempotency-Key": "nightly-2026-11-23"}
    first = _post_json(url, "/loops/by_hand/trigger", {}, headers=key)
    again = _post_json(url, "/loops/by_hand/trigger", {}, headers=key)
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == {**first.json(), "status": "duplicate"}


@pytest.mark.parametrize(
    ("path", "body", "status", "said"),
    [
        ("/loops/nope/trigger", {}, 404, "no loop 'nope'"),
        ("/loops/counted/trigger", {"inputs": {"m": 1}}, 422, "no param 'm'"),
        ("/loops/by_hand/trigger", {"inputs": {"m": 1}}, 422, "(the loop declares none, so it"),
        ("/loops/counted/trigger", {"inputs": {"n": "four"}}, 422, "n: 'four' is not of type"),
        ("/loops/counted/trigger", {"inputs": [1]}, 422, "inputs"),
        ("/loops/counted/trigger", {"inputs": {"n": _nested(40)}}, 422, "nested more than 32"),
    ],
)
def test_a_bad_trigger_is_refused_in_the_error_shape(
    served: tuple[Workspace, str], path: str, body: Any, status: int, said: str
) -> None:
    response = _post_json(served[1], path, body)
    assert response.status_code == status
    assert said in _error(response)["message"]


def test_a_paused_loop_queues_no_job(served: tuple[Workspace, str]) -> None:
    url = served[1]
    assert _post(url, "/loops/counted/pause").status_code == 200
    try:
        response = _post_json(url, "/loops/counted/trigger", {})
        assert response.status_code == 409
        assert "the loop is paused" in _error(response)["message"]
    finally:
        _post(url, "/loops/counted/unpause")


def test_a_retry_after_a_refusal_queues_the_job(served: tuple[Workspace, str]) -> None:
    url, key = served[1], {"Idempotency-Key": "retried-after-409"}
    assert _post(url, "/loops/counted/pause").status_code == 200
    try:
        refused = _post_json(url, "/loops/counted/trigger", {}, headers=key)
    finally:
        _post(url, "/loops/counted/unpause")
    retried = _post_json(url, "/loops/counted/trigger", {}, headers=key)
    assert (refused.status_code, retried.status_code) == (409, 202)
    assert retried.json()["status"] == "queued"


def test_an_idempotency_key_names_a_job_of_one_loop(served: tuple[Workspace, str]) -> None:
    url, key = served[1], {"Idempotency-Key": "same-key-two-loops"}
    first = _post_json(url, "/loops/by_hand/trigger", {}, headers=key)
    other = _post_json(url, "/loops/counted/trigger", {}, headers=key)
    assert (first.status_code, other.status_code) == (202, 202)
    assert first.json()["job_id"] != other.json()["job_id"]


def test_input_problems_are_listed_five_at_most(served: tuple[Workspace, str]) -> None:
    inputs = {f"unknown_{n}": n for n in range(20_000)}
    response = _post_json(served[1], "/loops/counted/trigger", {"inputs": inputs})
    assert response.status_code == 422
    assert _error(response)["message"].endswith("; and 19995 more")


def test_an_idempotency_key_past_200_characters_is_refused(served: tuple[Workspace, str]) -> None:
    headers = {"Idempotency-Key": "k" * 201}
    response = _post_json(served[1], "/loops/by_hand/trigger", {}, headers=headers)
    assert response.status_code == 422
    assert "idempotency-key" in _error(response)["message"]


def _waiting(workspace: Workspace) -> str:
    """An execution of ``gated`` waiting for approval."""
    done = workspace.cli("trigger", "gated", "--input", "n=9", "--wait", "--json", check=False)
    execution: dict[str, Any] = json.loads(done.stdout)
    assert execution["outcome"] == "awaiting_approval"
    return str(execution["execution_id"])


def test_what_waits_is_what_the_approvals_command_lists(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    execution_id = _waiting(workspace)
    response = _get(url, "/approvals?limit=10000")
    assert response.status_code == 200
    listed = {gate["execution_id"]: gate for gate in response.json()["approvals"]}
    printed = {
        g["execution_id"]: g for g in workspace.json("approvals", "--limit", "10000")["approvals"]
    }
    assert listed.keys() == printed.keys()
    gate, same = listed[execution_id], printed[execution_id]
    assert {**gate, "time_left_s": None} == {**same, "time_left_s": None}
    assert gate["plan"] == [
        {"action_id": "big", "skill": "log_only", "params": {"message": "big one"}}
    ]


def test_a_waiting_execution_shows_its_plan(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    record = _get(url, f"/executions/{_waiting(workspace)}").json()
    assert record["plan"] == [
        {"action_id": "big", "skill": "log_only", "params": {"message": "big one"}}
    ]
    assert record["analysis"] is None


def test_an_approval_runs_the_gated_action(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    execution_id = _waiting(workspace)
    answer = {"decision": "approve", "note": "fine"}
    response = _post_json(url, f"/approvals/{execution_id}", answer)
    assert (response.status_code, response.json()["outcome"]) == (200, "completed")
    assert workspace.json("show", execution_id)["approval"]["note"] == "fine"


def test_a_rejection_ends_the_execution(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    execution_id = _waiting(workspace)
    response = _post_json(url, f"/approvals/{execution_id}", {"decision": "reject"})
    assert response.json()["outcome"] == "rejected"


def test_an_answered_execution_cannot_be_answered_again(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    execution_id = _waiting(workspace)
    _post_json(url, f"/approvals/{execution_id}", {"decision": "reject"})
    again = _post_json(url, f"/approvals/{execution_id}", {"decision": "approve"})
    assert (again.status_code, _error(again)["code"]) == (409, "conflict")
    assert "already rejected" in _error(again)["message"]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/approvals/nope", {"decision": "approve"}, 404),
        ("/approvals/nope", {"decision": "maybe"}, 422),
        ("/approvals/nope", {"decision": "approve", "note": "x" * 2001}, 422),
    ],
)
def test_a_bad_answer_is_refused_in_the_error_shape(
    served: tuple[Workspace, str], path: str, body: dict[str, Any], status: int
) -> None:
    response = _post_json(served[1], path, body)
    assert response.status_code == status
    assert _error(response)["message"]


def test_metrics_are_served_in_prometheus_text_format(served: tuple[Workspace, str]) -> None:
    workspace, url = served
    workspace.json("trigger", "by_hand", "--wait")
    response = _get(url, "/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    ran = {
        sample.labels["outcome"]: sample.value
        for sample in families["loopengine_executions"].samples
        if sample.labels.get("loop") == "by_hand" and sample.name.endswith("_total")
    }
    assert ran["completed"] >= 1
    assert "loopengine_phase_duration_seconds" in families
    assert "loopengine_queue_depth" in families


def _executions(url: str, query: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = _get(url, f"/executions?{query}").json()["executions"]
    return listed


def test_a_dry_run_over_http_is_listed_and_counted_as_a_dry_run(
    served: tuple[Workspace, str],
) -> None:
    url = served[1]
    body = {"inputs": {"n": 9}, "dry_run": True}
    assert _post_json(url, "/loops/gated/trigger", body).status_code == 202
    found = wait_until(
        lambda: _executions(url, "loop_id=gated&outcome=dry_run"),
        "the dry run never ended as dry_run",
    )
    record = _get(url, f"/executions/{found[0]['execution_id']}").json()
    decide = next(p for p in record["phases"] if p["phase"] == "decide")
    assert (record["dry_run"], decide["data"]["note"]) == (True, "would wait for approval")
    families = text_string_to_metric_families(_get(url, "/metrics").text)
    counted = {
        sample.labels["outcome"]
        for family in families
        if family.name == "loopengine_executions"
        for sample in family.samples
        if sample.labels.get("loop") == "gated"
    }
    assert "dry_run" in counted


def test_a_dry_run_triggered_by_the_command_line_waits_for_its_outcome(
    served: tuple[Workspace, str],
) -> None:
    done = served[0].cli("trigger", "gated", "--input", "n=9", "--dry-run", "--wait", "--json")
    assert json.loads(done.stdout)["outcome"] == "dry_run"


def test_metrics_need_the_token(served: tuple[Workspace, str]) -> None:
    assert _get(served[1], "/metrics", token=None).status_code == 401


def test_a_tuning_cycle_queued_over_http_says_what_it_found(
    on_events: tuple[Workspace, str],
) -> None:
    workspace, url = on_events
    queued = httpx.post(url + "/autolearn/trigger", timeout=10)
    assert (queued.status_code, queued.json()["loop_id"]) == (202, "autotune")
    wait_until(lambda: workspace.json("history", "autotune")["executions"], "the cycle never ran")
    status = httpx.get(url + "/autolearn/status", timeout=10).json()
    assert status["samples"] == 0
    assert status["loops"]["autotune"]["outcome"] == "completed"
    assert httpx.get(url + "/autolearn/scores", timeout=10).json() == {
        "categories": {},
        "routing": {},
    }
    assert httpx.get(url + "/autolearn/history", timeout=10).json() == {"history": []}


def test_without_the_autotune_loop_a_cycle_cannot_be_queued(served: tuple[Workspace, str]) -> None:
    response = _post(served[1], "/autolearn/trigger")
    assert response.status_code == 404
    assert "copy the shipped loops/autotune.yaml" in _error(response)["message"]


@pytest.mark.parametrize("given", ["trace-42", "x" * 65, "bad id\\n"])
def test_each_answer_names_its_request_id_the_clients_when_well_formed(
    served: tuple[Workspace, str], given: str
) -> None:
    response = httpx.get(served[1] + "/health", headers={"X-Request-ID": given}, timeout=10)
    named = response.headers["x-request-id"]
    assert (named == given) is (given == "trace-42")
    assert len(named) <= 64
