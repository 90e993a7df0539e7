"""``http.request``: one HTTP call from a loop, to the destinations the LLM tools' sandbox allows
(``actions.http.allow`` adds loopback or private hosts), its answer recorded bounded.

httpx and the sandbox load when a request is sent, so the registry costs no HTTP import."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field

import loopengine._tracing as tracing
from loopengine._json import JSON, JSONObject
from loopengine._secrets import redact
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, skill

if TYPE_CHECKING:
    import httpx

    from loopengine.builtins._net import Allowed, Reply

__all__ = [
    "MAX_BODY",
    "MAX_RECORDED",
    "MAX_REDIRECTS",
    "Request",
    "Timeout",
    "Url",
    "http_request",
    "json_bytes",
    "perform",
]

MAX_BODY = 65_536
"""Most bytes of an answer's body read (and parsed, when JSON)."""
MAX_RECORDED = 8192
"""Most bytes of a body the record keeps, as JSON: an action's result is kept up to 16 KiB, and
past that its status and headers would no longer be readable (``act.<id>.result.status``)."""
MAX_REDIRECTS = 5
_MAX_RETRY_AFTER_S = 60.0
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_JSON_TYPE = {"content-type": "application/json"}
_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")

Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
Timeout = Annotated[float, Field(gt=0, le=600)]


def _http_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest[:1].strip("/?#"):
        raise ValueError(f"{url!r} is no http or https URL (write http://host/… or https://…)")
    return url


Url = Annotated[str, AfterValidator(_http_url)]
"""An http or https URL naming a host: checked at ``validate`` when the loop writes it out."""


@dataclass(frozen=True, slots=True)
class Request:
    """What is sent, and ``shown``: how the record describes it (its body as given)."""

    skill: str
    method: str
    url: str
    headers: Mapping[str, str]
    content: bytes | None
    shown: JSONObject
    timeout_s: float
    expect: frozenset[int] | None = None
    """Statuses that succeed; None: any 2xx."""


def _described(request: Request) -> JSONObject:
    return {
        "method": request.method,
        "url": request.url,
        "headers": dict(request.headers),
        **request.shown,
    }


async def perform(ctx: SkillContext, request: Request, dry_run: bool) -> JSONObject:
    """Send ``request`` (not in a dry run) and record it with its answer; a refused destination,
    an unexpected status or a network failure is a ``SkillError``, retryable for a network
    failure, a timeout, 429 and 5xx."""
    described = _described(request)
    if dry_run or ctx.dry_run:
        planned: JSONObject = redact({"request": described, "sent": False})
        return planned
    from loopengine.builtins._net import Allowed

    allowed = Allowed(tuple(ctx.config.actions.http.allow), "actions.http.allow in loopengine.yaml")
    started = time.perf_counter()
    reply, url = await _answered(request, allowed)
    answer: JSONObject = {
        "request": described,
        "status": reply.status,
        "headers": _headers(reply.headers),
        **_recorded(_body(reply), reply),
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }
    if url != request.url:
        answer["url"] = url
    _check_status(request, reply)
    masked: JSONObject = redact(answer)
    return masked


def _failed(
    request: Request, why: str, *, retryable: bool = False, after: float | None = None
) -> SkillError:
    return SkillError(
        redact(f"{request.skill} {request.method} {request.url}: {why}"),
        retryable=retryable,
        retry_after=after,
    )


async def _answered(request: Request, allowed: Allowed) -> tuple[Reply, str]:
    import anyio
    import httpx

    try:
        with anyio.fail_after(request.timeout_s):
            async with httpx.AsyncClient(timeout=request.timeout_s, trust_env=False) as client:
                return await _followed(client, request, allowed)
    except TimeoutError:
        raise _failed(
            request, f"no whole answer within {request.timeout_s:g} s (timeout_s)", retryable=True
        ) from None
    except PermissionError as exc:
        raise _failed(request, str(exc)) from None
    except (
        httpx.LocalProtocolError,
        httpx.UnsupportedProtocol,
        httpx.InvalidURL,
        ValueError,
    ) as exc:
        raise _failed(request, str(exc)) from None
    except (httpx.TransportError, ConnectionError) as exc:
        raise _failed(request, f"{type(exc).__name__}: {exc}", retryable=True) from None


async def _followed(
    client: httpx.AsyncClient, request: Request, allowed: Allowed
) -> tuple[Reply, str]:
    """The answer after the redirects, each hop to a destination checked as the first was; the
    current span's ``traceparent`` goes with it unless the request sets its own."""
    import httpx

    from loopengine.builtins._net import send

    method, url, content = request.method, request.url, request.content
    headers = httpx.Headers(request.headers)
    for name, value in tracing.outgoing().items():
        headers.setdefault(name, value)
    for _ in range(MAX_REDIRECTS + 1):
        reply = await send(
            client, method, url, allowed, limit=MAX_BODY, headers=headers, content=content
        )
        location = reply.headers.get("location")
        if reply.status not in _REDIRECTS or location is None:
            return reply, url
        source, target = httpx.URL(url), httpx.URL(url).join(location)
        if (target.scheme, target.netloc) != (source.scheme, source.netloc):
            for name in _CREDENTIALS:
                headers.pop(name, None)
        if reply.status == 303 or (reply.status in (301, 302) and method == "POST"):
            method = "GET" if method != "HEAD" else method
            content = None
            headers.pop("content-type", None)
        url = str(target)
    raise ValueError(f"more than {MAX_REDIRECTS} redirects")


def _headers(headers: httpx.Headers) -> dict[str, JSON]:
    joined: dict[str, str] = {}
    for name, value in headers.multi_items():
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return {**joined}


def _body(reply: Reply) -> JSON:
    """The body as text, or the JSON it holds when it says it is JSON and came whole."""
    text = reply.text
    kind = reply.headers.get("content-type", "").split(";")[0].strip().lower()
    if not reply.truncated and (kind == "application/json" or kind.endswith("+json")):
        try:
            parsed: JSON = json.loads(text)
        except (ValueError, RecursionError):
            return text
        return parsed
    return text


def _json_size(value: JSON) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode())


def _recorded(body: JSON, reply: Reply) -> JSONObject:
    """The body as the record keeps it: whole within ``MAX_RECORDED``, else the start of its
    text and a marker; ``truncated`` when it is not all the body sent."""
    size = _json_size(body)
    if size <= MAX_RECORDED:
        return {"body": body, "truncated": reply.truncated}
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    more = ", more sent" if reply.truncated else ""
    marker = f"… [cut: {len(reply.body):,} bytes read{more}]"
    budget = MAX_RECORDED - _json_size(marker)
    while (size := _json_size(text)) > budget:
        text = text[: len(text) * budget // size]
    return {"body": text + marker, "truncated": True}


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` in seconds, bounded (a date or garbage: None, the backoff decides)."""
    try:
        return min(_MAX_RETRY_AFTER_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None


def _check_status(request: Request, reply: Reply) -> None:
    expected = request.expect
    if (200 <= reply.status < 300) if expected is None else reply.status in expected:
        return
    said = reply.text[:200].strip()
    why = f"answered {reply.status}" + (f" ({said})" if said else "")
    if reply.status == 429 or reply.status >= 500:
        after = _retry_after(reply.headers.get("retry-after"))
        raise _failed(request, why, retryable=True, after=after)
    wanted = "2xx" if expected is None else ", ".join(map(str, sorted(expected)))
    raise _failed(request, f"{why}, expected {wanted} (expect lists the statuses that succeed)")


def json_bytes(value: Any, what: str) -> bytes:
    """``value`` as the JSON text sent (UTF-8); ``SkillError`` naming ``what`` when it is no
    JSON (NaN, a set, an object)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise SkillError(f"{what} is not JSON: {exc}") from None


def _encoded(json_: Any, body: str | None) -> tuple[bytes | None, JSONObject, dict[str, str]]:
    """The content to send, how the record shows it, and the content type it implies."""
    if json_ is not None and body is not None:
        raise SkillError("http.request takes json or body, not both")
    if json_ is not None:
        return json_bytes(json_, "http.request: json"), {"json": json_}, _JSON_TYPE
    if body is not None:
        return body.encode(), {"body": body}, {}
    return None, {}, {}


@skill(
    "http.request",
    description="Send one HTTP request (public hosts; loopback or private ones listed under "
    "actions.http.allow) and record its status, headers and body (64 KiB at most).",
)
async def http_request(
    ctx: SkillContext,
    url: Url,
    method: Method = "GET",
    headers: dict[str, str] | None = None,
    json_: Annotated[Any, Field(alias="json")] = None,
    body: str | None = None,
    timeout_s: Timeout = 30.0,
    expect: list[int] | None = None,
    dry_run: bool = False,
) -> JSONObject:
    """Send one HTTP request.

    Args:
        url: http or https URL.
        method: GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
        headers: Request headers (`${ secret.NAME }` for credentials: they are masked).
        json_: A JSON body (sets Content-Type: application/json); not with `body`.
        body: A text body; not with `json`.
        timeout_s: Deadline of the whole exchange, redirects included.
        expect: Statuses that succeed (default: any 2xx).
        dry_run: Record the request without sending it.
    """
    content, shown, implied = _encoded(json_, body)
    given = {name.lower() for name in headers or {}}
    implied = {name: value for name, value in implied.items() if name not in given}
    request = Request(
        "http.request",
        method,
        url,
        {**implied, **(headers or {})},
        content,
        shown,
        timeout_s,
        None if expect is None else frozenset(expect),
    )
    return await perform(ctx, request, dry_run)
