"""``webhook.send`` against a real receiver on 127.0.0.1: the payload posted as JSON, signed as
the daemon's webhook triggers verify, shaped for a chat, and sent where ``http.request`` may go."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.builtins import builtin_registry
from loopengine.builtins._webhook import shaped
from loopengine.contract import Config
from loopengine.errors import SkillError
from loopengine.skills import SkillContext
from loopengine.triggers import verify_delivery, webhook_key
from tests.builtins.http_server import HostileServer, serving
from tests.builtins.skill_calls import call, context
from tests.engine.conftest import open_harness

pytestmark = pytest.mark.anyio

SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with serving() as running:
        yield running


def _allowing(server: HostileServer, **options: Any) -> SkillContext:
    return context(f"127.0.0.1:{server.port}", **options)


async def send(ctx: SkillContext, **params: Any) -> Any:
    return await call("webhook.send", ctx, **params)


def _verified(delivery: dict[str, Any], secret: str = SECRET) -> str:
    """The delivery id, as the daemon's webhook trigger verifies the request it received."""
    headers = httpx.Headers(delivery["headers"])
    body = delivery["body"].encode()
    return verify_delivery(
        "standard", webhook_key(secret), headers, body, now=time.time(), tolerance_s=300
    )


async def test_a_payload_is_posted_as_json(server: HostileServer) -> None:
    result = await send(_allowing(server), url=server.url("/echo"), payload={"down": ["api"]})
    [delivery] = server.seen
    assert (delivery["method"], json.loads(delivery["body"])) == ("POST", {"down": ["api"]})
    assert delivery["headers"]["content-type"] == "application/json"
    assert "webhook-signature" not in delivery["headers"]
    assert result["status"] == 200


async def test_a_whsec_secret_signs_the_delivery_as_the_daemon_verifies(
    server: HostileServer,
) -> None:
    await send(_allowing(server), url=server.url("/echo"), payload={"n": 1}, secret=SECRET)
    assert _verified(server.seen[0]).startswith("msg_")


async def test_a_retried_call_is_the_same_delivery(server: HostileServer) -> None:
    for _ in range(2):
        await send(_allowing(server), url=server.url("/echo"), payload={"n": 1}, secret=SECRET)
    first, second = (_verified(delivery) for delivery in server.seen)
    assert first == second


async def test_another_call_is_another_delivery(server: HostileServer) -> None:
    for key in ("e1:act:send", "e2:act:send"):
        ctx = context(f"127.0.0.1:{server.port}", key=key)
        await send(ctx, url=server.url("/echo"), payload={"n": 1}, secret=SECRET)
    first, second = (_verified(delivery) for delivery in server.seen)
    assert first != second


async def test_a_short_secret_is_refused_before_anything_is_sent(server: HostileServer) -> None:
    with pytest.raises(SkillError, match=r"webhook\.send: secret: the secret is 5 bytes"):
        await send(_allowing(server), url=server.url("/echo"), payload={}, secret="short")
    assert server.seen == []


async def test_a_dry_run_records_the_delivery_and_sends_nothing(server: HostileServer) -> None:
    result = await send(
        _allowing(server, dry_run=True), url=server.url("/echo"), payload="down", format="slack"
    )
    assert (result["sent"], result["request"]["payload"]) == (False, {"text": "down"})
    assert server.seen == []


async def test_a_host_not_allowed_is_refused_as_http_request_refuses_it(
    server: HostileServer,
) -> None:
    with pytest.raises(SkillError, match=r"list .127\.0\.0\.1:[0-9]+. under actions\.http\.allow"):
        await send(context(), url=server.url("/echo"), payload={})
    assert server.seen == []


async def test_a_receiver_answering_503_is_worth_retrying(server: HostileServer) -> None:
    with pytest.raises(SkillError, match="answered 503") as failed:
        await send(_allowing(server), url=server.url("/status/503"), payload={})
    assert failed.value.retryable


@pytest.mark.parametrize(
    ("payload", "format", "posted"),
    [
        ("api is down", "slack", {"text": "api is down"}),
        ("api is down", "discord", {"content": "api is down"}),
        ({"blocks": []}, "slack", {"blocks": []}),
        (["a", 1], "discord", {"content": '["a", 1]'}),
        ("api is down", "json", "api is down"),
    ],
)
def test_a_chat_format_puts_a_text_where_the_chat_shows_it(
    payload: Any, format: Any, posted: Any
) -> None:
    assert shaped(payload, format) == posted


def test_a_text_past_discords_limit_is_cut_to_it() -> None:
    content = shaped("x" * 5000, "discord")
    assert isinstance(content, dict)
    assert content["content"] == "x" * 1999 + "…"


async def test_a_loop_sends_a_signed_webhook_with_a_secret_it_reads(
    server: HostileServer, tmp_path: Path
) -> None:
    text = f"""\
id: alerting
trigger: {{type: manual}}
decide:
  fallback_action: alert
act:
  actions:
    - action_id: alert
      skill_id: webhook.send
      params:
        url: '{server.url("/echo")}'
        payload: {{loop: alerting, state: down}}
        secret: '${{ secret.HOOK_SECRET }}'
validate:
  assertions:
    - {{expression: 'act.alert.result.status == `200`'}}
"""
    config = Config.model_validate({"actions": {"http": {"allow": [f"127.0.0.1:{server.port}"]}}})
    async with open_harness(
        tmp_path, builtin_registry(), config, environ={"HOOK_SECRET": SECRET}
    ) as harness:
        done = await harness.engine.run(harness.loop(text))
        view = await harness.view(done)
    assert view["outcome"] == "completed"
    [delivery] = server.seen
    assert json.loads(delivery["body"]) == {"loop": "alerting", "state": "down"}
    assert _verified(delivery)
    assert SECRET not in json.dumps(view)
