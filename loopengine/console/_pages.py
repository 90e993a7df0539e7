"""What the console's views share: the gate (sessions, CSRF), the templates, and the guard every
request passes: security headers on every answer, a session on every page but the login when
the daemon has a token."""

from __future__ import annotations

import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopengine.api._access import loopback_host
from loopengine.api._context import ApiContext
from loopengine.console._forms import MAX_FORM_BYTES, read_form
from loopengine.console._security import (
    HEADERS,
    csrf_accepted,
    safe_next,
    same_origin,
)
from loopengine.console._session import csrf_token, issue, session_key, verify
from loopengine.store import iso

__all__ = [
    "COOKIE",
    "MAX_AGE_S",
    "PREFIX",
    "Gate",
    "Guard",
    "Pages",
    "cookie_name",
    "redirect",
    "serves",
    "time_left",
]

COOKIE = "loopengine_console"
"""The session cookie's name, the daemon's port after it (``cookie_name``): browsers send a
host's cookies to each of its ports, so two daemons on one host would log each other out."""
MAX_AGE_S = 12 * 3600
"""How long a login lasts."""
PREFIX = "/console/"
"""Where the console's pages live besides ``/``, ``/login`` and ``/logout``: the API's paths
(``/loops``, ``/executions``…) stay the API's."""
_ROOT = Path(__file__).parent
_STATIC = f"{PREFIX}static/"
"""Where the stylesheet, the script and the icon are served (without a session, revalidated
by their ETag rather than stored)."""
_PUBLIC = ("/login", _STATIC)
_ANONYMOUS = "loopback"
"""The session of every request when no token is set (loopback only)."""


def serves(path: str) -> bool:
    """Whether ``path`` is the console's rather than the API's."""
    return path in ("/", "/login", "/logout", PREFIX.rstrip("/")) or path.startswith(PREFIX)


def cookie_name(request: Request) -> str:
    """The session cookie's name for the daemon ``request`` reached (by its port)."""
    server = request.scope.get("server")
    return f"{COOKIE}_{server[1]}" if server and server[1] else COOKIE


@dataclass(frozen=True, slots=True)
class Gate:
    """Who may use the console: the holder of a session signed with the key derived from the
    token, or anyone on loopback when there is no token."""

    token: str | None
    key: bytes
    ended: dict[str, int] = field(default_factory=dict)
    """Sessions logged out before they expire (value → expiry), refused until then. A restart
    forgets them; changing the token ends every session."""

    @classmethod
    def of(cls, token: str | None) -> Gate:
        return cls(token, session_key(token or secrets.token_urlsafe(32)))

    def session(self, request: Request) -> str | None:
        """The request's session, when it has one that holds."""
        if self.token is None:
            return _ANONYMOUS
        found = verify(self.key, request.cookies.get(cookie_name(request), ""), time.time())
        return None if found is None or found.value in self.ended else found.value

    def logout(self, session: str) -> None:
        """End ``session`` here and now, not only in the browser that logs out (a copy of its
        cookie would still hold)."""
        now = time.time()
        for value, expires_at in list(self.ended.items()):
            if expires_at <= now:
                del self.ended[value]
        if (found := verify(self.key, session, now)) is not None:
            self.ended[found.value] = found.expires_at

    def login(self, given: str) -> str | None:
        """A new session's cookie value when ``given`` is the token."""
        if self.token is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        return issue(self.key, time.time(), MAX_AGE_S, secrets.token_urlsafe(16)).value

    def csrf(self, session: str) -> str:
        """The CSRF token of the forms shown to ``session``."""
        return csrf_token(self.key, session)


class Pages:
    """What every view uses: the daemon's context, the gate and the templates."""

    def __init__(self, context: ApiContext) -> None:
        self.context = context
        self.gate = Gate.of(context.token)
        self.templates = Environment(
            loader=FileSystemLoader(_ROOT / "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            auto_reload=False,
        )
        self.templates.filters.update(
            iso=iso, when=_when, shown=_shown, pretty=_pretty, left=time_left
        )

    def render(
        self, request: Request, template: str, status_code: int = 200, **values: Any
    ) -> HTMLResponse:
        """``template`` rendered with ``values`` and what the layout needs."""
        session = request.scope.get("state", {}).get("console_session")
        page = self.templates.get_template(template).render(
            csrf=self.gate.csrf(session) if session else "",
            logged_in=session is not None and self.gate.token is not None,
            path=request.url.path,
            **values,
        )
        return HTMLResponse(page, status_code=status_code)

    async def posted(self, request: Request, max_bytes: int = MAX_FORM_BYTES) -> dict[str, str]:
        """The fields of a form posted by a page of this session (at most ``max_bytes``); 403
        without its CSRF token."""
        fields = await read_form(request, max_bytes)
        session = request.scope.get("state", {}).get("console_session")
        if session is None or not csrf_accepted(self.gate.csrf(session), fields.get("csrf")):
            raise HTTPException(403, "the form is not one this page served: reload it")
        return fields


def _when(moment: float) -> str:
    """An instant as people read it, in UTC."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_left(seconds: float) -> str:
    """How long until an approval escalates, as people say it (``overdue`` past it)."""
    if seconds <= 0:
        return "overdue"
    whole = max(1, round(seconds))
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min")] if whole >= 60 else [(secs, "s")]
    shown = [f"{count} {unit}" for count, unit in parts if count][:2]
    return " ".join(shown) + " left"


def _shown(value: Any) -> str:
    """A value as text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _pretty(value: Any) -> str:
    """A value as indented JSON, to read."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def redirect(to: str) -> RedirectResponse:
    """See ``to`` next (303: a GET, whatever the request was)."""
    return RedirectResponse(to, status_code=303)


class Guard:
    """Adds the security headers to every answer (pages are never stored), answers only
    loopback host names when no token is set, sends a request without a session to the login
    page (a page) or refuses it (403, a form), and refuses a form posted from another site."""

    def __init__(self, app: ASGIApp, pages: Pages) -> None:
        self.app, self.pages = app, pages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        caching = b"no-cache" if scope["path"].startswith(_STATIC) else b"no-store"

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    *((k.lower().encode(), v.encode()) for k, v in HEADERS.items()),
                    (b"cache-control", caching),
                ]
            await send(message)

        request = Request(scope, receive)
        refusal = self.refusal(request)
        if refusal is not None:
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def refusal(self, request: Request) -> Response | None:
        """Why ``request`` is not served, as the answer to give; None when it is (its session
        noted in its scope's state for the views)."""
        gate, host = self.pages.gate, request.headers.get("host", "")
        path = request.scope["path"]  # what the router serves; a Host header cannot change it
        if gate.token is None and not loopback_host(host):
            return _text(421, "without a token the console answers on 127.0.0.1 only")
        if request.method == "POST" and not same_origin(request.headers, request.url.scheme, host):
            return _text(403, "a form posted from another site is refused")
        session = gate.session(request)
        request.scope.setdefault("state", {})["console_session"] = session
        if session is not None or path.startswith(_PUBLIC):
            return None
        if request.method != "GET":
            return _text(403, "log in first")
        wanted = path + (f"?{request.url.query}" if request.url.query else "")
        return redirect("/login?" + urlencode({"next": safe_next(wanted)}))


def _text(status_code: int, message: str) -> Response:
    return Response(message + "\n", status_code=status_code, media_type="text/plain")
