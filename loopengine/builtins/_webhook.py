"""``webhook.send``: POST a JSON payload as ``http.request`` sends a request (same destinations,
bounds and retries), signed as Standard Webhooks when given a secret (the scheme the daemon's
webhook triggers verify), shaped by ``format`` for a chat's incoming webhook."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from loopengine._json import JSON, JSONObject
from loopengine.builtins._http import Request, Timeout, Url, json_bytes, perform
from loopengine.errors import SkillError, TriggerError
from loopengine.skills import SkillContext, skill

__all__ = ["CHAT_LIMITS", "shaped", "signed", "webhook_send"]

Format = Literal["json", "slack", "discord"]
CHAT_LIMITS = {"slack": ("text", 40_000), "discord": ("content", 2_000)}
"""The field a chat's incoming webhook shows, and the most characters it takes there."""


def shaped(payload: Any, format: Format) -> JSON:
    """What ``format`` posts: the payload itself as ``json`` or when it is an object (a chat's
    own shape); else its text in the chat's field, cut to the chat's limit."""
    if format == "json" or isinstance(payload, Mapping):
        unchanged: JSON = payload
        return unchanged
    field, limit = CHAT_LIMITS[format]
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return {field: text if len(text) <= limit else text[: limit - 1] + "…"}


def signed(secret: str, delivery: str, stamp: int, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` sent as ``delivery`` at ``stamp``."""
    from loopengine.triggers import standard_signature, webhook_key

    try:
        key = webhook_key(secret)
    except TriggerError as exc:
        raise SkillError(f"webhook.send: secret: {exc}") from None
    signature = standard_signature(key, delivery, str(stamp), body)
    return {
        "webhook-id": delivery,
        "webhook-timestamp": str(stamp),
        "webhook-signature": f"v1,{signature}",
    }


@skill(
    "webhook.send",
    description="POST a JSON payload to a webhook (signed as Standard Webhooks with a secret; "
    "format slack or discord for a chat's incoming webhook); destinations as http.request.",
)
async def webhook_send(
    ctx: SkillContext,
    url: Url,
    payload: Any,
    secret: str | None = None,
    format: Format = "json",
    timeout_s: Timeout = 30.0,
    dry_run: bool = False,
) -> JSONObject:
    """POST a JSON payload to a webhook.

    Args:
        url: http or https URL of the receiver.
        payload: What is posted: any JSON; with slack or discord, a text becomes the message.
        secret: Signs the delivery as Standard Webhooks (`${ secret.NAME }`: `whsec_…`, 16+ bytes).
        format: json, slack or discord.
        timeout_s: Deadline of the whole exchange, redirects included.
        dry_run: Record the delivery without sending it.
    """
    body = shaped(payload, format)
    content = json_bytes(body, "webhook.send: payload")
    headers = {"content-type": "application/json"}
    if secret is not None:
        delivery = "msg_" + hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()[:32]
        headers |= signed(secret, delivery, int(ctx.clock()), content)
    request = Request("webhook.send", "POST", url, headers, content, {"payload": body}, timeout_s)
    return await perform(ctx, request, dry_run)
