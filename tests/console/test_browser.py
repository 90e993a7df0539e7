"""The console in a real browser (Debian's chromium, driven by Playwright, never a downloaded
browser) against a real daemon: log in, run a loop from its form and see it complete, pause a
loop, hostile text shown as text, no serious axe-core violation, the controls reached by
keyboard; each test saves a screenshot of its page."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect, sync_playwright

from loopengine.testing import reply, tool_call
from tests.api.test_chat import TOKEN as CHAT_TOKEN
from tests.api.test_chat import chat_daemon
from tests.console.conftest import HOSTILE, TOKEN, Served
from tests.waiting import wait_until

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="no chromium on PATH (apt-get install chromium; .ci/run installs it, and in CI its "
    "absence fails these tests)",
)


SERIOUS = ("serious", "critical")
"""The impacts of an axe-core violation no page may have."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None, "no chromium on PATH: .ci/run installs Debian's"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def _logged_in(browser: Browser, url: str, token: str, screenshot: Path) -> Iterator[Page]:
    """A fresh browser page on the console at ``url``, logged in with ``token``; its screenshot
    saved to ``screenshot`` when the block ends, whatever its outcome."""
    context = browser.new_context(base_url=url)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    opened.goto("/")
    expect(opened).to_have_url(f"{url}/login?next=%2F")
    opened.get_by_label("The daemon's token").fill(token)
    opened.get_by_role("button", name="Log in").click()
    expect(opened.get_by_role("heading", name="Overview")).to_be_visible()
    try:
        yield opened
    finally:
        opened.screenshot(path=screenshot, full_page=True)
        context.close()


@pytest.fixture
def page(
    browser: Browser, served: Served, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh browser page on the console, logged in; its screenshot is saved under the test's
    temporary folder when the test ends."""
    with _logged_in(browser, served.url, TOKEN, tmp_path / f"{request.node.name}.png") as opened:
        yield opened


def test_run_a_loop_from_its_form_and_see_it_complete(page: Page) -> None:
    section = page.locator("section.loop", has=page.locator("#loop-counted"))
    section.get_by_text("Run now").click()
    field = section.locator("#in-counted-n")
    field.fill("ten")
    section.get_by_role("button", name="Run counted").click()
    expect(page.locator("#in-counted-n-error")).to_contain_text("is not of type 'integer'")
    field.fill("5")
    section.get_by_role("button", name="Run counted").click()
    expect(page).to_have_url("/console/executions?loop_id=counted")
    completed = page.locator("tbody tr", has=page.locator(".o-completed"))

    def shown() -> int:
        page.reload()
        return completed.count()

    wait_until(shown, "the run never showed as completed", every_s=0.2)
    completed.first.get_by_role("link").click()
    expect(page.locator("ol.timeline .phase", has_text="learn")).to_be_visible()
    expect(page.locator("h1")).to_contain_text("counted")


def test_approve_a_waiting_execution_and_see_it_complete(page: Page, served: Served) -> None:
    done = served.workspace.cli(
        "trigger", "gated", "--input", "n=11", "--wait", "--json", check=False
    )
    execution_id = json.loads(done.stdout)["execution_id"]
    page.goto("/console/executions?outcome=awaiting_approval")
    page.get_by_role("link", name=execution_id[:12]).click()
    expect(page.get_by_role("heading", name="Waiting for approval")).to_be_visible()
    page.get_by_label("Note").fill("checked")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("p", has_text="Approval of")).to_contain_text("approved")
    expect(page.locator(".badge").first).to_have_text("completed")


def test_filter_executions_by_outcome(page: Page, served: Served) -> None:
    served.workspace.cli("trigger", "gated", "--input", "n=12", "--wait", check=False)
    page.goto("/console/executions")
    page.get_by_label("Outcome").select_option("awaiting_approval")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"outcome=awaiting_approval"))
    badges = page.locator("tbody .badge")
    expect(badges.first).to_have_text("awaiting approval")
    assert set(badges.all_inner_texts()) == {"awaiting approval"}


def test_pause_a_loop(page: Page, served: Served) -> None:
    section = page.locator("section.loop", has=page.locator("#loop-on_event"))
    section.get_by_role("button", name="Pause").click()
    expect(section.get_by_text("paused since")).to_be_visible()
    loops = {loop["loop_id"]: loop for loop in served.workspace.json("status")["loops"]}
    assert loops["on_event"]["paused"] is True
    section.get_by_role("button", name="Unpause").click()
    expect(section.get_by_role("button", name="Pause")).to_be_visible()


def test_hostile_text_runs_nothing(page: Page, served: Served) -> None:
    text = " ".join(HOSTILE)
    run = served.workspace.json("trigger", "says", "--input", f"text={text}", "--wait")
    for shown in ("/", f"/console/executions/{run['execution_id']}"):
        page.goto(shown)
        expect(page.locator("main")).to_contain_text("<img src=x onerror=alert(1)>")
        assert page.title().endswith("· loopengine")
        assert page.locator("main img").count() == 0
        assert page.locator("script:not([src])").count() == 0


def _pages(served: Served) -> list[str]:
    run = served.workspace.json("trigger", "counted", "--wait")
    return [
        "/",
        "/console/executions",
        "/console/executions?outcome=nope",
        f"/console/executions/{run['execution_id']}",
        "/console/approvals",
    ]


def _accessible(page: Page, shown: list[str]) -> None:
    """Each page of ``shown`` visited, with no serious axe-core violation."""
    axe = Axe()
    for path in shown:
        page.goto(path)
        response = axe.run(page).response
        assert response["url"].endswith(path)
        serious = [v["id"] for v in response["violations"] if v["impact"] in SERIOUS]
        assert serious == [], f"{path}: {serious}"


def test_every_page_has_no_serious_accessibility_violation(page: Page, served: Served) -> None:
    _accessible(page, _pages(served))


def test_the_loop_signal_and_autolearn_pages_have_no_serious_accessibility_violation(
    page: Page, served: Served
) -> None:
    served.workspace.cli("emit", "shown.event", "--data", '{"page": 1}')
    served.workspace.cli("metrics", "record", "shown.metric", "1")
    served.workspace.cli("metrics", "record", "shown.metric", "2")
    pages = ["/console/loops/scheduled", "/console/events", "/console/metrics"]
    _accessible(page, [*pages, "/console/events?name=a..b", "/console/autolearn"])


def test_hostile_events_and_loop_files_run_nothing(page: Page, served: Served) -> None:
    data = json.dumps({"note": " ".join(HOSTILE)})
    served.workspace.cli("emit", "hostile.browsed", "--data", data)
    for shown, text in (("/console/events", HOSTILE[1]), ("/console/loops/scheduled", HOSTILE[0])):
        page.goto(shown)
        expect(page.locator("main")).to_contain_text(text)
        assert page.title().endswith("· loopengine")
        assert page.locator("main img").count() == 0
        assert page.locator("script:not([src])").count() == 0


def test_an_event_is_emitted_from_the_keyboard(page: Page) -> None:
    page.goto("/console/events")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Emit an event":
            break
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.type("typed.by.keys")
    page.keyboard.press("Tab")
    page.keyboard.type('{"keys": true}')
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("emitted")
    expect(page.locator("tbody tr").first).to_contain_text("typed.by.keys")


def test_the_login_page_has_no_serious_accessibility_violation(
    browser: Browser, served: Served, tmp_path: Path
) -> None:
    context = browser.new_context(base_url=served.url)
    opened = context.new_page()
    try:
        opened.goto("/login")
        found = Axe().run(opened).response["violations"]
        assert [v["id"] for v in found if v["impact"] in SERIOUS] == []
    finally:
        opened.screenshot(path=tmp_path / "login.png", full_page=True)
        context.close()


def test_the_overview_s_controls_are_reached_by_keyboard(page: Page) -> None:
    reached: list[str] = []
    for _ in range(80):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert "Pause" in reached
    assert "Run now" in reached
    assert "Executions" in reached
    assert {"Events", "Metrics", "Autolearn"} <= set(reached)
    assert "Log out" in reached


def test_a_running_execution_grows_live_with_its_log_and_completes_without_a_reload(
    page: Page, served: Served, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    page.goto("/console/executions?loop_id=held")
    page.evaluate("window.notReloaded = true")
    served.workspace.cli("trigger", "held", "--input", f"gate={gate}")
    running = page.locator("tbody tr", has=page.locator(".o-running"))
    expect(running).to_have_count(1)
    assert page.evaluate("window.notReloaded") is True
    running.get_by_role("link").click()
    page.evaluate("window.notReloaded = true")
    expect(page.locator(".badge").first).to_have_text("running")
    expect(page.locator("ol.timeline .phase", has_text="decide")).to_be_visible()
    expect(page.locator("ol.timeline .phase", has_text="act")).to_have_count(0)
    expect(page.locator("ol.log")).to_contain_text("analyze/note waiting for the gate")
    gate.touch()
    expect(page.locator(".badge").first).to_have_text("completed")
    expect(page.locator("ol.timeline .phase", has_text="act")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True


def test_the_executions_list_follows_change_after_change_without_a_reload(
    page: Page, served: Served, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    page.goto("/console/executions?loop_id=held")
    page.evaluate("window.notReloaded = true")
    served.workspace.cli("trigger", "held", "--input", f"gate={gate}")
    running = page.locator("tbody tr", has=page.locator(".o-running"))
    try:
        expect(running).to_have_count(1)
    finally:
        gate.touch()
    expect(running).to_have_count(0)
    expect(page.locator("tbody tr", has=page.locator(".o-completed")).first).to_be_visible()
    assert page.evaluate("window.notReloaded") is True


def test_approve_in_place_on_the_approvals_page(page: Page, served: Served) -> None:
    served.workspace.cli("trigger", "gated", "--input", "n=31", "--wait", check=False)
    page.goto("/")
    page.get_by_role("link", name="Approvals").click()
    gate = page.locator("section.approval").first
    expect(gate.locator("h2")).to_contain_text("gated")
    execution_id = gate.get_by_role("link").inner_text()
    gate.get_by_label("Note").fill("fine")
    gate.get_by_role("button", name="Approve").click()
    expect(page).to_have_url("/console/approvals")
    expect(page.get_by_role("link", name=execution_id)).to_have_count(0)
    page.goto("/console/executions?outcome=completed&loop_id=gated")
    expect(page.get_by_role("link", name=execution_id)).to_be_visible()


def test_chat_and_open_a_stage_s_badge_by_keyboard(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    with chat_daemon(tmp_path_factory.mktemp("browsed-chat")) as daemon:
        (daemon.workspace.root / "facts.txt").write_text(" ".join(HOSTILE))
        daemon.llm.script("ol1", [tool_call("read_file", {"path": "facts.txt"}), reply("Read.")])
        daemon.llm.script("m1", [reply("It holds markup.")])
        daemon.llm.script("m2", [reply(f"Reviewed: {' '.join(HOSTILE)}")])
        with _logged_in(browser, daemon.api, CHAT_TOKEN, tmp_path / "chat.png") as page:
            dialogs: list[str] = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto("/console/chat")
            page.get_by_label("Message").fill("What does the facts file hold?")
            page.get_by_label("Mode").select_option("reflexive")
            visited = page.evaluate("history.length")
            page.get_by_role("button", name="Send").click()
            expect(page.get_by_role("heading", name="Reply")).to_be_visible()
            assert page.evaluate("history.length") == visited, "the reply was not streamed"
            expect(page.locator(".answer")).to_contain_text(HOSTILE[1])
            badges = page.locator("details.stage")
            expect(badges).to_have_count(3)
            assert [badges.nth(n).get_attribute("open") for n in range(3)] == [None] * 3
            for _ in range(40):
                page.keyboard.press("Tab")
                if page.evaluate("document.activeElement.textContent.trim()") == "OL1 ▸ 2 turns":
                    break
            page.keyboard.press("Enter")
            research = badges.first
            expect(research.get_by_role("table")).to_contain_text("read_file")
            expect(research).to_contain_text("ok")
            expect(research.locator("pre").nth(1)).to_contain_text(HOSTILE[0])
            assert page.title().endswith("· loopengine")
            assert page.locator("main img").count() == 0
            assert page.locator("main a[href^='javascript']").count() == 0
            assert dialogs == []
            violations = Axe().run(page).response["violations"]
            assert [v["id"] for v in violations if v["impact"] in SERIOUS] == []
