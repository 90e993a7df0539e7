"""A loop's page: its file highlighted as text, whether it checks, its next fires as
``loopengine plan`` gives them, its recent executions."""

from __future__ import annotations

import re

from loopengine.console._drawing import Token, highlighted
from tests.console.conftest import FROM_FILE, HOSTILE_FILE, SCRIPT, Console, Served


def test_keys_and_comments_are_told_apart_from_the_rest() -> None:
    lines = highlighted("# a note\nid: x\n  - {type: cron}\nplain text\n")
    assert lines == [
        [Token("comment", "# a note")],
        [Token("key", "id"), Token("text", ": x")],
        [Token("text", "  - {type: cron}")],
        [Token("text", "plain text")],
    ]


def test_a_list_item_s_key_is_a_key() -> None:
    assert highlighted("  - action_id: say") == [
        [Token("text", "  - "), Token("key", "action_id"), Token("text", ": say")]
    ]


def test_the_overview_links_each_loop_s_page(console: Console) -> None:
    assert 'href="/console/loops/scheduled"' in console.http.get("/").text


def test_a_loop_s_page_shows_its_file_as_text(console: Console) -> None:
    page = console.http.get("/console/loops/scheduled")
    assert page.status_code == 200
    assert SCRIPT not in page.text
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page.text
    assert '<span class="y-key">trigger</span>' in page.text
    assert "The file is the version served." in page.text


def test_a_loop_s_page_plans_its_next_ten_fires(console: Console) -> None:
    page = console.http.get("/console/loops/scheduled").text
    assert "<code>30 2 * * *</code> (Europe/Paris)" in page
    assert "Daylight saving: fixed-time" in page
    assert "Catchup " in page
    assert len(re.findall(r"<td>\d{4}-\d\d-\d\dT02:30:00\+0[12]:00</td>", page)) == 10


def test_a_loop_without_a_schedule_says_so(console: Console) -> None:
    page = console.http.get("/console/loops/on_event").text
    assert "No cron trigger (event:event): it fires on no schedule." in page


def test_a_loop_s_page_lists_its_recent_executions(served: Served, console: Console) -> None:
    run = served.workspace.json("trigger", "counted", "--wait")
    page = console.http.get("/console/loops/counted").text
    assert f'href="/console/executions/{run["execution_id"]}"' in page


def test_an_edit_that_does_not_check_is_shown_with_its_errors(
    served: Served, console: Console
) -> None:
    path = served.workspace.root / "loops" / HOSTILE_FILE
    path.write_text(FROM_FILE.replace("fallback_action: log_only", "fallback_action: 7"))
    try:
        page = console.http.get("/console/loops/from_file").text
    finally:
        path.write_text(FROM_FILE)
    assert "no longer checks: the daemon keeps the version it runs" in page
    assert re.search(r'<li class="error">[^<]*decide.fallback_action: ', page)


def test_a_loop_no_daemon_serves_is_a_404_page(console: Console) -> None:
    page = console.http.get("/console/loops/nowhere")
    assert page.status_code == 404
    assert "no loop &#39;nowhere&#39; is served" in page.text
