"""The executions list (filters, cursor paging as GET /executions) and one execution: its
phases on a timeline, its approval answered through the form, run again."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from loopengine.console._executions import PAGE, instant, timeline
from loopengine.store import ExecutionRow, PhaseResult, executions, write_once
from tests.console.conftest import Console, Served
from tests.engine.conftest import interrupt_after_decide
from tests.waiting import wait_until


def _phase(name: str, start: float, end: float) -> PhaseResult:
    return PhaseResult(name, start, end, True)


def test_the_timeline_places_each_phase_by_its_time() -> None:
    bars = timeline([_phase("detect", 10.0, 11.0), _phase("act", 12.0, 14.0)])
    assert [(bar.phase.phase, bar.offset, bar.width) for bar in bars] == [
        ("detect", 0.0, 25.0),
        ("act", 50.0, 50.0),
    ]


def test_a_phase_of_no_time_stays_visible() -> None:
    bars = timeline([_phase("detect", 0.0, 0.0), _phase("act", 0.0, 4.0)])
    assert bars[0].width > 0
    assert all(bar.offset + bar.width <= 100 for bar in bars)


def test_no_phase_is_no_bar() -> None:
    assert timeline([]) == []


def _bulk_row(name: str, started_at: float, **more: Any) -> ExecutionRow:
    return ExecutionRow(
        id=f"bulk-{name}",
        loop_id="bulk",
        loop_version="v",
        loop_file="bulk.yaml",
        job_id=f"bulk-{name}",
        durability="phase",
        dry_run=False,
        started_at=started_at,
        **more,
    )


def _bulk(served: Served, count: int) -> None:
    """``count`` finished executions of a loop ``bulk`` started by cron at 1,000 s and after,
    and one running started by a webhook at 500 s, written to the daemon's store."""
    rows = [
        _bulk_row(
            f"{n:04}",
            1_000.0 + n,
            status="finished",
            trigger_type="cron",
            completed_at=1_000.5 + n,
            outcome="failed" if n % 2 else "completed",
        )
        for n in range(count)
    ]
    rows.append(_bulk_row("running", 500.0, status="running", trigger_type="webhook"))
    for row in rows:
        write_once(served.workspace.env["LOOPENGINE_DATABASE"], executions.insert_execution, row)


@pytest.fixture(scope="module")
def bulk(served: Served) -> int:
    count = PAGE + 7
    _bulk(served, count)
    return count


def _ids(page: str) -> list[str]:
    found = [part.split('"')[0] for part in page.split('href="/console/executions/bulk-')[1:]]
    return [execution_id for execution_id in found if execution_id != "running"]


def test_the_list_pages_by_cursor_without_repeating_nor_skipping(
    console: Console, bulk: int
) -> None:
    first = console.http.get("/console/executions?loop_id=bulk")
    assert first.status_code == 200
    assert len(_ids(first.text)) == PAGE
    following = first.text.split('rel="next" href="')[1].split('"')[0].replace("&amp;", "&")
    assert parse_qs(urlsplit(following).query)["loop_id"] == ["bulk"]
    second = console.http.get(following)
    assert second.status_code == 200
    assert 'rel="next"' not in second.text
    seen = _ids(first.text) + _ids(second.text)
    assert seen == [f"{n:04}" for n in reversed(range(bulk))]


def test_the_list_filters_by_outcome(console: Console, bulk: int) -> None:
    page = console.http.get("/console/executions?loop_id=bulk&outcome=failed").text
    assert _ids(page)
    assert all(int(n) % 2 for n in _ids(page))
    assert '<option value="failed" selected>' in page


def test_the_list_filters_running_executions(console: Console, bulk: int) -> None:
    page = console.http.get("/console/executions?loop_id=bulk&outcome=running").text
    assert 'href="/console/executions/bulk-running"' in page
    assert _ids(page) == []
    assert '<option value="running" selected>' in page


def test_the_list_filters_by_trigger_type(console: Console, bulk: int) -> None:
    page = console.http.get("/console/executions?loop_id=bulk&trigger=webhook").text
    assert 'href="/console/executions/bulk-running"' in page
    assert _ids(page) == []
    cron = console.http.get("/console/executions?loop_id=bulk&trigger=cron").text
    assert 'href="/console/executions/bulk-running"' not in cron


def test_the_list_filters_by_start_time(console: Console, bulk: int) -> None:
    query = "loop_id=bulk&since=1970-01-01T00:16:43&until=1970-01-01T00:16:46"
    assert _ids(console.http.get(f"/console/executions?{query}").text) == ["0005", "0004", "0003"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("1970-01-01T00:16:40", 1000.0),
        ("1970-01-01T00:16", 960.0),
        ("1970-01-01T01:16:40+01:00", 1000.0),
        ("", None),
    ],
)
def test_a_filter_s_time_is_utc_unless_it_says(given: str, expected: float | None) -> None:
    assert instant("since", given) == expected


@pytest.mark.parametrize(
    "query",
    [
        "outcome=nope",
        "trigger=nope",
        "since=yesterday",
        "until=2026-13-01T00:00",
        "cursor=not-a-cursor",
        "cursor=" + "x" * 5000,
    ],
)
def test_a_bad_filter_is_a_422_page(console: Console, query: str) -> None:
    response = console.http.get(f"/console/executions?{query}")
    assert response.status_code == 422
    assert "text/html" in response.headers["content-type"]


def _run(served: Served, loop_id: str, *inputs: str) -> dict[str, Any]:
    """The record of a run of ``loop_id`` once it ended or waits (``trigger --wait``)."""
    args = [arg for pair in inputs for arg in ("--input", pair)]
    done = served.workspace.cli("trigger", loop_id, *args, "--wait", "--json", check=False)
    return dict(json.loads(done.stdout))


def test_an_execution_shows_its_phases_decision_and_envelope(
    served: Served, console: Console
) -> None:
    page = _page_of_a_run(served, console, "counted", "n=4")
    for phase in ("detect", "analyze", "decide", "act", "validate", "learn"):
        assert f'<span class="phase">{phase}</span>' in page
    assert page.count('<svg class="bar"') >= 6
    assert "<h2>Decision</h2>" in page
    assert "&#34;n&#34;: 4" in page
    assert "completed" in page


def test_approve_through_the_form_runs_the_gated_action(served: Served, console: Console) -> None:
    run = _run(served, "gated", "n=7")
    assert run["outcome"] == "awaiting_approval"
    path = f"/console/executions/{run['execution_id']}"
    page = console.http.get(path).text
    assert "Waiting for approval" in page
    assert 'value="approve"' in page
    response = console.post(path + "/answer", {"decision": "approve", "note": "fine <b>by</b> me"})
    assert response.status_code == 303
    assert response.headers["location"] == path
    shown = served.workspace.json("show", run["execution_id"])
    assert shown["outcome"] == "completed"
    assert shown["approval"]["note"] == "fine <b>by</b> me"
    page = console.http.get(path).text
    assert "Waiting for approval" not in page
    assert "fine &lt;b&gt;by&lt;/b&gt; me" in page


def test_reject_through_the_form(served: Served, console: Console) -> None:
    run = _run(served, "gated", "n=9")
    path = f"/console/executions/{run['execution_id']}"
    assert console.post(path + "/answer", {"decision": "reject"}).status_code == 303
    assert served.workspace.json("show", run["execution_id"])["outcome"] == "rejected"


def test_answering_what_does_not_wait_says_so(served: Served, console: Console) -> None:
    run = _run(served, "counted")
    path = f"/console/executions/{run['execution_id']}/answer"
    response = console.post(path, {"decision": "approve"})
    assert response.status_code == 409
    assert 'class="error" role="alert"' in response.text


def test_an_answer_is_approve_or_reject(served: Served, console: Console) -> None:
    run = _run(served, "gated", "n=8")
    path = f"/console/executions/{run['execution_id']}/answer"
    assert console.post(path, {"decision": "maybe"}).status_code == 422
    assert served.workspace.json("show", run["execution_id"])["outcome"] == "awaiting_approval"


def test_run_again_queues_the_same_inputs(served: Served, console: Console) -> None:
    run = _run(served, "counted", "n=6")
    response = console.post(f"/console/executions/{run['execution_id']}/again", {})
    assert response.status_code == 303

    def again() -> list[dict[str, Any]]:
        runs = served.workspace.json("history", "counted")["executions"]
        newer = [r for r in runs if r["started_at"] > run["started_at"]]
        return [r for r in newer if r["outcome"] == "completed"]

    repeated = wait_until(again, "the run was not repeated")[0]
    payload = served.workspace.json("show", repeated["execution_id"])["job"]["payload"]
    assert payload == {"n": 6}


def _page_of_a_run(served: Served, console: Console, loop_id: str, *inputs: str) -> str:
    """The console's page of a run of ``loop_id`` once it ended or waits."""
    run = _run(served, loop_id, *inputs)
    return console.http.get(f"/console/executions/{run['execution_id']}").text


def test_an_execution_shows_the_rule_that_held_and_each_action_s_result(
    served: Served, console: Console
) -> None:
    page = _page_of_a_run(served, console, "says", "text=hello")
    decision = page.split("<h2>Decision</h2>")[1].split("</dl>")[0]
    assert "<code>say</code>" in decision
    assert "0: <code>`true`</code>" in decision
    assert "rule 0 holds" in decision
    actions = page.split("<h2>Actions</h2>")[1].split("</table>")[0]
    assert "<code>log_only</code>" in actions
    assert "hello &lt;img src=x onerror=alert(1)&gt;" in actions


def test_an_execution_shows_what_its_skills_logged_as_text(
    served: Served, console: Console
) -> None:
    page = _page_of_a_run(served, console, "says", "text=hello")
    log = page.split("<h2>Log</h2>")[1].split("</ol>")[0]
    assert '<span class="level">INFO</span> <code>act/say</code>' in log
    assert '<span class="message">hello &lt;img src=x onerror=alert(1)&gt;</span>' in log


def test_a_note_over_its_bound_is_refused_and_the_gate_still_waits(
    served: Served, console: Console
) -> None:
    run = _run(served, "gated", "n=10")
    path = f"/console/executions/{run['execution_id']}/answer"
    response = console.post(path, {"decision": "approve", "note": "x" * 2001})
    assert response.status_code == 422
    assert "at most 2000 characters" in response.text
    assert served.workspace.json("show", run["execution_id"])["outcome"] == "awaiting_approval"


def test_only_a_manual_run_runs_again(served: Served, console: Console) -> None:
    served.workspace.cli("emit", "hostile.again", "--data", "{}")

    def fired() -> list[dict[str, Any]]:
        return list(served.workspace.json("history", "on_event")["executions"])

    run = wait_until(fired, "the event's loop never ran")[0]
    response = console.post(f"/console/executions/{run['execution_id']}/again", {})
    assert response.status_code == 409
    assert "only a manual run runs again" in response.text


def _interrupt_after_decide(served: Served, execution_id: str) -> None:
    """Leave ``execution_id`` as a crash right after its decide phase would."""
    write_once(served.workspace.env["LOOPENGINE_DATABASE"], interrupt_after_decide, execution_id)


def test_resume_runs_an_interrupted_execution_on_from_its_last_phase(
    served: Served, console: Console
) -> None:
    run = _run(served, "says", "text=again")
    _interrupt_after_decide(served, run["execution_id"])
    path = f"/console/executions/{run['execution_id']}"
    assert f'action="{path}/resume"' in console.http.get(path).text
    response = console.post(path + "/resume", {})
    assert (response.status_code, response.headers["location"]) == (303, path)
    shown = served.workspace.json("show", run["execution_id"])
    assert shown["outcome"] == "completed"
    assert [p["phase"] for p in shown["phases"]][-4:] == ["act", "validate", "learn", "store"]
    assert f'action="{path}/resume"' not in console.http.get(path).text


def test_resuming_what_was_not_interrupted_says_why_on_the_page(
    served: Served, console: Console
) -> None:
    run = _run(served, "counted")
    response = console.post(f"/console/executions/{run['execution_id']}/resume", {})
    assert response.status_code == 409
    assert "is completed, not interrupted" in response.text
    assert 'class="error" role="alert"' in response.text


def test_resuming_an_execution_that_does_not_exist_is_a_404(console: Console) -> None:
    assert console.post("/console/executions/nope/resume", {}).status_code == 404


def test_resume_without_the_form_s_csrf_token_is_refused(served: Served, console: Console) -> None:
    run = _run(served, "counted")
    path = f"/console/executions/{run['execution_id']}/resume"
    response = console.http.post(path, data={"csrf": "forged"}, headers={"Origin": console.url})
    assert response.status_code == 403
