"""The console app served in process over a fake daemon context: a store out of reach is a 503
page, and wrong tokens tried too often make logins wait."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from loopengine.console import create_console
from loopengine.console._security import FAILED_LOGINS
from loopengine.errors import StoreUnavailable

TOKEN = "in-process-token"
URL = "http://127.0.0.1:8787"


@dataclass
class _DownStore:
    outage: StoreUnavailable | None = None

    async def read(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the database is unavailable: disk full", retry_after=7)


@dataclass
class _Context:
    token: str | None
    store: _DownStore
    lease_s: float = 30.0


def _requests(
    token: str | None, *requests: tuple[str, str, dict[str, str]]
) -> list[httpx.Response]:
    """What the console answers to each ``(method, path, form)`` in turn."""
    console = create_console(_Context(token, _DownStore()))

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=console.app)
        async with httpx.AsyncClient(transport=transport, base_url=URL) as client:
            return [
                await client.request(method, path, data=form or None, headers={"Origin": URL})
                for method, path, form in requests
            ]

    return anyio.run(main)


def test_a_store_out_of_reach_is_a_503_page_to_retry() -> None:
    [answer] = _requests(None, ("GET", "/", {}))
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "7"
    assert "disk full: reload in a moment" in answer.text
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


def test_wrong_tokens_tried_too_often_make_logins_wait() -> None:
    wrong = [("POST", "/login", {"token": f"guess-{n}"}) for n in range(FAILED_LOGINS)]
    *refused, waiting = _requests(TOKEN, *wrong, ("POST", "/login", {"token": TOKEN}))
    assert {answer.status_code for answer in refused} == {401}
    assert waiting.status_code == 429
    assert 0 < int(waiting.headers["retry-after"]) <= 60
    assert "too many wrong tokens" in waiting.text
    assert "set-cookie" not in waiting.headers


def test_fewer_wrong_tokens_leave_the_right_one_in() -> None:
    wrong = [("POST", "/login", {"token": "guess"}) for _ in range(FAILED_LOGINS - 1)]
    answers = _requests(TOKEN, *wrong, ("POST", "/login", {"token": TOKEN}))
    assert answers[-1].status_code == 303


def test_one_clients_wrong_tokens_make_only_its_own_logins_wait() -> None:
    """Else anyone could keep the owner out with ten wrong tokens a minute."""
    console = create_console(_Context(TOKEN, _DownStore()))

    def client(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=console.app, client=(address, 50_000))
        return httpx.AsyncClient(transport=transport, base_url=URL, headers={"Origin": URL})

    async def main() -> tuple[int, int]:
        async with client("10.0.0.9") as guesser, client("127.0.0.1") as owner:
            for n in range(FAILED_LOGINS):
                await guesser.post("/login", data={"token": f"guess-{n}"})
            waiting = await guesser.post("/login", data={"token": TOKEN})
            let_in = await owner.post("/login", data={"token": TOKEN})
            return waiting.status_code, let_in.status_code

    assert anyio.run(main) == (429, 303)
