"""What every answer of the console holds to: security headers, text shown as text, forms
refused from another site or without their token, bodies bounded."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from loopengine.console._forms import MAX_FIELDS, MAX_FORM_BYTES
from tests.console.conftest import (
    COUNTED,
    HOSTILE,
    HOSTILE_FILE,
    IMAGE,
    LINK,
    SCRIPT,
    Console,
    Served,
)
from tests.daemon.conftest import serving
from tests.waiting import wait_until

PAGES = [
    "/",
    "/login",
    "/console/executions",
    "/console/executions?outcome=completed",
    "/console/executions/nope",
    "/console/executions?outcome=nope",
    "/console/chat",
    "/console/static/console.css",
    "/console/static/console.js",
    "/console/nothing/here",
]


@pytest.mark.parametrize("page", PAGES)
def test_every_answer_forbids_inline_script_framing_and_sniffing(
    console: Console, page: str
) -> None:
    headers = console.http.get(page).headers
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"


def test_pages_name_their_icon_so_browsers_do_not_ask_the_api_for_one(console: Console) -> None:
    assert '<link rel="icon" href="/console/static/favicon.svg"' in console.http.get("/").text
    icon = console.http.get("/console/static/favicon.svg")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")


def test_pages_are_never_stored_and_static_files_are_revalidated(console: Console) -> None:
    assert console.http.get("/").headers["cache-control"] == "no-store"
    static = console.http.get("/console/static/console.css")
    assert static.headers["cache-control"] == "no-cache"
    again = console.http.get(
        "/console/static/console.css", headers={"If-None-Match": static.headers["etag"]}
    )
    assert again.status_code == 304


def test_the_login_redirect_has_the_headers_too(anonymous: Console) -> None:
    headers = anonymous.http.get("/").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


class _Inline(HTMLParser):
    """What of a page would run or style inline: script elements without ``src``, ``on*``
    handlers, ``style`` attributes and elements, ``javascript:`` URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if (tag == "script" and "src" not in names) or tag == "style":
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.found.append(f"{tag} {name}")
            if name in ("href", "src", "action") and (value or "").lower().startswith("javas"):
                self.found.append(f"{tag} {name}={value}")


@pytest.mark.parametrize("page", ["/", "/login", "/console/executions"])
def test_pages_hold_no_inline_script_nor_style(console: Console, page: str) -> None:
    parser = _Inline()
    parser.feed(console.http.get(page).text)
    assert parser.found == []


def test_a_missing_page_is_a_404_page(console: Console) -> None:
    response = console.http.get("/console/executions/nope")
    assert response.status_code == 404
    assert "text/html" in response.headers["content-type"]
    assert "no execution" in response.text


def test_a_method_a_page_does_not_take_says_which_it_takes(console: Console) -> None:
    response = console.http.delete("/console/executions")
    assert response.status_code == 405
    assert {method.strip() for method in response.headers["allow"].split(",")} == {"GET", "HEAD"}


def _hostile_run(served: Served) -> str:
    """An execution of ``says`` whose input and action result hold every hostile text."""
    text = " ".join(HOSTILE)
    return str(
        served.workspace.json("trigger", "says", "--input", f"text={text}", "--wait")[
            "execution_id"
        ]
    )


def test_what_a_run_recorded_is_shown_as_text(served: Served, console: Console) -> None:
    page = console.http.get(f"/console/executions/{_hostile_run(served)}").text
    parser = _Inline()
    parser.feed(page)
    assert parser.found == []
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert LINK in page


def test_a_loop_s_file_and_param_description_are_shown_as_text(console: Console) -> None:
    page = console.http.get("/").text
    parser = _Inline()
    parser.feed(page)
    assert parser.found == []
    assert HOSTILE_FILE not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.yaml" in page
    assert "<script>alert(1)</script>" not in page
    assert IMAGE not in page


def test_an_event_s_data_is_shown_as_text(served: Served, console: Console) -> None:
    data = json.dumps({"page": SCRIPT, "img": IMAGE, "link": LINK})
    served.workspace.cli("emit", "hostile.page", "--data", data)

    def fired() -> list[dict[str, Any]]:
        return list(served.workspace.json("history", "on_event")["executions"])

    run = wait_until(fired, "the event's loop ran")[0]
    page = console.http.get(f"/console/executions/{run['execution_id']}").text
    parser = _Inline()
    parser.feed(page)
    assert parser.found == []
    assert SCRIPT not in page
    assert IMAGE not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_form_posted_from_another_site_is_refused(console: Console) -> None:
    response = console.post("/console/loops/counted/pause", {}, Origin="http://evil.example")
    assert response.status_code == 403
    assert console.http.get("/").text.count("/console/loops/counted/pause") == 1


def test_a_form_without_origin_is_judged_by_its_referer(console: Console) -> None:
    csrf = console.csrf()
    refused = console.http.post(
        "/console/loops/counted/pause",
        data={"csrf": csrf},
        headers={"Referer": "http://evil.example/page"},
    )
    assert refused.status_code == 403
    accepted = console.http.post(
        "/console/loops/counted/unpause",
        data={"csrf": csrf},
        headers={"Referer": console.url + "/"},
    )
    assert accepted.status_code == 303


def test_a_form_with_neither_origin_nor_referer_is_refused(console: Console) -> None:
    response = console.http.post("/console/loops/counted/pause", data={"csrf": console.csrf()})
    assert response.status_code == 403


@pytest.mark.parametrize("csrf", [None, "", "forged-token"])
def test_a_form_without_its_csrf_token_is_refused(console: Console, csrf: str | None) -> None:
    data = {"x": "1"} if csrf is None else {"csrf": csrf}
    response = console.http.post(
        "/console/loops/counted/pause", data=data, headers={"Origin": console.url}
    )
    assert response.status_code == 403
    assert "reload" in response.text


def test_another_session_s_csrf_token_is_refused(served: Served, console: Console) -> None:
    other = served.client()
    assert other.login().status_code == 303
    theirs = other.csrf()
    other.close()
    response = console.http.post(
        "/console/loops/counted/pause", data={"csrf": theirs}, headers={"Origin": console.url}
    )
    assert response.status_code == 403


def test_a_form_too_large_is_refused(console: Console) -> None:
    response = console.post("/console/loops/counted/run", {"in.n": "1" * MAX_FORM_BYTES})
    assert response.status_code == 413


def test_a_form_of_too_many_fields_is_refused(console: Console) -> None:
    fields = {f"f{i}": "1" for i in range(MAX_FIELDS + 1)}
    assert console.post("/console/loops/counted/run", fields).status_code == 400


def test_a_form_that_is_not_utf8_is_refused(console: Console) -> None:
    body = b"csrf=" + console.csrf().encode() + b"&in.n=%ff%fe"
    response = console.http.post(
        "/console/loops/counted/run",
        content=body,
        headers={"Origin": console.url, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 400


def test_a_body_that_is_not_a_form_is_refused(console: Console) -> None:
    response = console.http.post(
        "/console/loops/counted/run", json={"csrf": console.csrf()}, headers={"Origin": console.url}
    )
    assert response.status_code == 415


def test_the_console_without_a_token_needs_no_login_on_loopback(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("console")
    with serving(root, {"counted.yaml": COUNTED}, token=None) as (_, url):
        page = httpx.get(url + "/", timeout=30)
        assert page.status_code == 200
        assert "Log out" not in page.text
        assert httpx.get(url + "/login", timeout=30).status_code == 303
        rebound = httpx.get(url + "/", headers={"Host": "evil.example:80"}, timeout=30)
        assert rebound.status_code == 421
