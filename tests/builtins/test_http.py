"""``http.request`` against real servers on 127.0.0.1: what it sends and records, the statuses
that fail and those worth retrying, and the bounds a hostile server meets (a body dripped a
byte a second, a body of 1 GiB, a redirect to a refused address, a host not allowed)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.builtins import builtin_registry
from loopengine.builtins._http import MAX_RECORDED, _body
from loopengine.builtins._net import Reply
from loopengine.contract import Config, LoadReport
from loopengine.engine._results import MAX_RESULT_BYTES
from loopengine.errors import SkillError
from loopengine.skills import SkillContext
from tests.builtins.http_server import HostileServer, serving
from tests.builtins.skill_calls import call, context
from tests.engine.conftest import open_harness

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with serving() as running:
        yield running


def _allowing(server: HostileServer) -> SkillContext:
    return context(f"127.0.0.1:{server.port}")


async def request(ctx: SkillContext, **params: Any) -> Any:
    return await call("http.request", ctx, **params)


async def test_a_json_answer_is_recorded_parsed(server: HostileServer) -> None:
    result = await request(_allowing(server), url=server.url("/echo"), method="POST", json={"n": 1})
    assert result["status"] == 200
    assert result["body"]["body"] == '{"n": 1}'
    assert result["body"]["headers"]["content-type"] == "application/json"
    assert result["headers"]["content-type"] == "application/json"


async def test_a_text_answer_is_recorded_as_text(server: HostileServer) -> None:
    result = await request(_allowing(server), url=server.url("/text"))
    assert (result["body"], result["truncated"]) == ("plain text", False)


async def test_a_body_past_what_the_record_keeps_is_cut_and_the_status_stays_readable(
    server: HostileServer,
) -> None:
    result = await request(_allowing(server), url=server.url("/text?size=40000"))
    assert (result["status"], result["truncated"]) == (200, True)
    assert result["body"].endswith("x… [cut: 40,000 bytes read]")
    assert len(json.dumps(result["body"], ensure_ascii=False).encode()) <= MAX_RECORDED
    assert len(json.dumps(result).encode()) < MAX_RESULT_BYTES


async def test_a_text_body_and_headers_are_sent_as_given(server: HostileServer) -> None:
    result = await request(
        _allowing(server),
        url=server.url("/echo"),
        method="PUT",
        body="a=1",
        headers={"Content-Type": "text/plain", "X-Trace": "t1"},
    )
    echoed = result["body"]
    assert (echoed["method"], echoed["body"], echoed["headers"]["X-Trace"]) == ("PUT", "a=1", "t1")


async def test_json_and_body_together_are_refused(server: HostileServer) -> None:
    with pytest.raises(SkillError, match="json or body, not both"):
        await request(_allowing(server), url=server.url("/echo"), json={}, body="x")


async def test_a_dry_run_records_the_request_and_sends_nothing(server: HostileServer) -> None:
    result = await request(
        _allowing(server), url=server.url("/echo"), method="POST", json={"n": 1}, dry_run=True
    )
    assert result == {
        "request": {
            "method": "POST",
            "url": server.url("/echo"),
            "headers": {"content-type": "application/json"},
            "json": {"n": 1},
        },
        "sent": False,
    }
    assert server.seen == []


async def test_an_execution_dry_run_sends_nothing_either(server: HostileServer) -> None:
    ctx = context(f"127.0.0.1:{server.port}", dry_run=True)
    assert (await request(ctx, url=server.url("/echo")))["sent"] is False
    assert server.seen == []


async def test_a_status_not_expected_fails_for_good(server: HostileServer) -> None:
    with pytest.raises(SkillError, match=r"answered 404 .*expected 2xx") as failed:
        await request(_allowing(server), url=server.url("/status/404"))
    assert not failed.value.retryable


async def test_an_expected_status_succeeds(server: HostileServer) -> None:
    result = await request(_allowing(server), url=server.url("/status/404"), expect=[404])
    assert result["status"] == 404


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_429_and_5xx_are_worth_retrying(server: HostileServer, status: int) -> None:
    with pytest.raises(SkillError, match=f"answered {status}") as failed:
        await request(_allowing(server), url=server.url(f"/status/{status}"))
    assert (failed.value.retryable, failed.value.retry_after) == (True, 0.0)


async def test_a_refused_connection_is_worth_retrying() -> None:
    with serving() as gone:
        port = gone.port
    with pytest.raises(SkillError) as failed:
        await request(context(f"127.0.0.1:{port}"), url=f"http://127.0.0.1:{port}/")
    assert failed.value.retryable


async def test_a_host_not_allowed_is_refused_saying_how_to_allow_it(
    server: HostileServer,
) -> None:
    with pytest.raises(SkillError) as refused:
        await request(context(), url=server.url("/echo"))
    message = str(refused.value)
    assert "\n" not in message
    assert message.endswith(
        f"127.0.0.1:{server.port} is a loopback, private or metadata address (127.0.0.1); to "
        f"reach it, list '127.0.0.1:{server.port}' under actions.http.allow in loopengine.yaml"
    )
    assert not refused.value.retryable
    assert server.seen == []


async def test_a_redirect_to_a_refused_address_is_not_followed(server: HostileServer) -> None:
    with serving() as inside:
        target = inside.url("/echo")
        with pytest.raises(SkillError, match="is a loopback, private or metadata address"):
            await request(_allowing(server), url=server.url(f"/redirect?to={target}"))
        assert inside.seen == []


async def test_a_redirect_to_an_allowed_address_is_followed(server: HostileServer) -> None:
    result = await request(_allowing(server), url=server.url("/redirect?to=/text"))
    assert (result["status"], result["url"]) == (200, server.url("/text"))


async def test_a_body_dripped_a_byte_a_second_meets_the_deadline(server: HostileServer) -> None:
    with pytest.raises(SkillError, match=r"no whole answer within 1 s \(timeout_s\)") as late:
        await request(_allowing(server), url=server.url("/drip"), timeout_s=1)
    assert late.value.retryable


async def test_a_body_of_1_gib_is_cut_and_memory_stays_bounded(server: HostileServer) -> None:
    tracemalloc.start()
    try:
        result = await request(_allowing(server), url=server.url("/flood"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["truncated"] is True
    assert result["body"].endswith("[[[… [cut: 65,536 bytes read, more sent]")
    assert peak < 16 * 1_048_576


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
async def test_a_compressed_body_is_inflated_no_further_than_the_record_keeps(
    server: HostileServer, encoding: str
) -> None:
    tracemalloc.start()
    try:
        result = await request(_allowing(server), url=server.url(f"/bomb/{encoding}"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["truncated"] is True
    assert result["body"].startswith("[[[")
    assert "[cut: 65,536 bytes read" in result["body"]
    assert peak < 16 * 1_048_576


@pytest.mark.parametrize("encoding", ["corrupt", "trailing"])
async def test_a_corrupt_compressed_body_fails_saying_so(
    server: HostileServer, encoding: str
) -> None:
    with pytest.raises(SkillError, match="compressed body is corrupt") as failed:
        await request(_allowing(server), url=server.url(f"/bomb/{encoding}"))
    assert not failed.value.retryable


async def test_gzip_members_one_after_another_are_each_decoded(server: HostileServer) -> None:
    result = await request(_allowing(server), url=server.url("/bomb/members"))
    assert (result["body"], result["truncated"]) == ("abcdef", False)


async def test_a_compressed_body_that_decodes_to_nothing_is_not_read_without_end(
    server: HostileServer,
) -> None:
    result = await request(_allowing(server), url=server.url("/bomb/empty-blocks"))
    assert (result["body"], result["truncated"]) == ("", True)


async def test_a_secret_in_a_header_is_masked_in_the_record(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopengine._secrets import remember

    canary = "http-header-canary-7c2d41"
    remember(canary)
    result = await request(
        _allowing(server), url=server.url("/echo"), headers={"Authorization": f"Bearer {canary}"}
    )
    assert canary not in json.dumps(result)
    assert result["request"]["headers"]["Authorization"] == "Bearer ***"


def _pinging(url: str) -> str:
    return f"""\
id: pinging
trigger: {{type: manual}}
decide:
  fallback_action: ping
act:
  max_retries: 2
  actions:
    - action_id: ping
      skill_id: http.request
      params:
        url: '{url}'
        headers: {{Authorization: 'Bearer ${{ secret.PING_TOKEN }}'}}
validate:
  assertions:
    - {{expression: 'act.ping.result.status == `200`'}}
"""


async def test_a_loop_calls_an_endpoint_retrying_a_503_and_records_the_answer(
    server: HostileServer, tmp_path: Path
) -> None:
    server.statuses.append(503)
    canary = "ping-token-canary-3b9e0f"
    config = Config.model_validate({"actions": {"http": {"allow": [f"127.0.0.1:{server.port}"]}}})
    async with open_harness(
        tmp_path, builtin_registry(), config, environ={"PING_TOKEN": canary}
    ) as harness:
        done = await harness.engine.run(harness.loop(_pinging(server.url("/status/200"))))
        view = await harness.view(done)
    assert view["outcome"] == "completed"
    failed, answered = harness.phase(view, "act")["data"]["calls"]
    assert "answered 503" in failed["error"]
    assert (answered["attempts"], answered["result"]["status"]) == (2, 200)
    assert answered["result"]["request"]["headers"] == {"Authorization": "Bearer ***"}
    assert canary not in json.dumps(view)


def test_validate_knows_the_json_param_by_the_name_a_loop_writes(
    load: Callable[[str], LoadReport],
) -> None:
    text = _pinging("https://example.com/")
    assert load(text.replace("headers:", "json: {n: 1}\n        headers:")).ok
    report = load(text.replace("headers:", "jsn: {n: 1}\n        headers:"))
    [problem] = [d.message for d in report.diagnostics]
    assert "skill 'http.request' has no param 'jsn'; did you mean 'json'?" in problem


def test_validate_refuses_a_url_that_is_not_http(load: Callable[[str], LoadReport]) -> None:
    report = load(_pinging("ftp://example.com/"))
    [problem] = [d.message for d in report.diagnostics]
    assert problem.endswith(
        "param of skill 'http.request': Value error, 'ftp://example.com/' is no http or https "
        "URL (write http://host/… or https://…)"
    )


async def test_a_name_is_connected_to_at_its_checked_address_and_still_named(
    server: HostileServer,
) -> None:
    url = f"http://localhost:{server.port}/echo"
    result = await request(context(f"localhost:{server.port}"), url=url)
    assert result["body"]["headers"]["Host"] == f"localhost:{server.port}"


async def test_credentials_do_not_follow_a_redirect_to_another_host(
    server: HostileServer,
) -> None:
    with serving() as other:
        ctx = context(f"127.0.0.1:{server.port}", f"127.0.0.1:{other.port}")
        headers = {"Authorization": "Bearer t0k3n-not-for-others", "X-Trace": "t1"}
        target = other.url("/echo")
        await request(ctx, url=server.url(f"/redirect?to={target}"), headers=headers)
        [seen] = other.seen
    assert "Authorization" not in seen["headers"]
    assert seen["headers"]["X-Trace"] == "t1"


async def test_a_redirect_loop_ends_after_five_hops(server: HostileServer) -> None:
    with pytest.raises(SkillError, match="more than 5 redirects"):
        await request(_allowing(server), url=server.url("/redirect"))
    assert len(server.seen) == 6


def test_json_nested_past_the_recursion_limit_is_kept_as_text() -> None:
    deep = b"[" * 30_000 + b"]" * 30_000
    reply = Reply(200, httpx.Headers({"content-type": "application/json"}), deep, False, None)
    assert _body(reply) == deep.decode()
