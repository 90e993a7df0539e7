"""The overview: daemons, queue, loops with their last outcomes; pause, unpause and run now
through its forms, a bad input shown beside its field as the API reports it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from loopengine.console._overview import field_value, form_inputs
from tests.console.conftest import Console, Served
from tests.waiting import wait_until

PARAMS: dict[str, Any] = {
    "n": {"type": "integer", "default": 1},
    "name": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "anything": {},
}


@pytest.mark.parametrize(
    ("fragment", "text", "value"),
    [
        ({"type": "integer"}, "10", 10),
        ({"type": "integer"}, "ten", "ten"),
        ({"type": "string"}, "007", "007"),
        ({"type": "string"}, "[1]", "[1]"),
        ({"type": "array"}, '["a", "b"]', ["a", "b"]),
        ({"type": "boolean"}, "true", True),
        ({}, "[" * 5000, "[" * 5000),
        ({}, "NaN", "NaN"),
    ],
)
def test_a_field_s_text_is_read_for_its_param(
    fragment: dict[str, Any], text: str, value: Any
) -> None:
    assert field_value(fragment, text) == value


def test_an_empty_field_leaves_its_param_s_default() -> None:
    assert form_inputs(PARAMS, {"in.n": "", "in.name": "x", "csrf": "t"}) == ({"name": "x"}, {})


def test_each_field_gets_its_own_problem() -> None:
    inputs, problems = form_inputs(PARAMS, {"in.n": "ten", "in.tags": "[1]", "in.nope": "1"})
    assert inputs == {"n": "ten", "tags": [1], "nope": 1}
    assert problems["n"] == "'ten' is not of type 'integer'"
    assert problems["tags"] == "1 is not of type 'string'"
    assert problems["nope"].startswith("no param 'nope' (params: anything, n, name, tags)")


def test_the_overview_shows_daemons_queue_and_loops(console: Console) -> None:
    page = console.http.get("/").text
    assert "Daemons alive" in page
    assert "heartbeat" in page
    assert re.search(r'class="count">\d+</span> queued', page)
    for loop_id in ("counted", "says", "gated", "on_event", "from_file"):
        assert f'id="loop-{loop_id}"' in page


def _loop_section(page: str, loop_id: str) -> str:
    start = page.index(f'id="loop-{loop_id}"')
    return page[start : page.find('<section class="loop"', start)]


def test_pause_and_unpause_through_the_forms(served: Served, console: Console) -> None:
    paused = console.post("/console/loops/from_file/pause", {})
    assert paused.status_code == 303
    assert paused.headers["location"] == "/"
    loops = {loop["loop_id"]: loop for loop in served.workspace.json("status")["loops"]}
    assert loops["from_file"]["paused"] is True
    section = _loop_section(console.http.get("/").text, "from_file")
    assert "paused since" in section
    assert "/console/loops/from_file/unpause" in section
    assert console.post("/console/loops/from_file/unpause", {}).status_code == 303
    loops = {loop["loop_id"]: loop for loop in served.workspace.json("status")["loops"]}
    assert loops["from_file"]["paused"] is False


def test_pausing_a_loop_no_daemon_serves_is_a_404(console: Console) -> None:
    response = console.post("/console/loops/nope/pause", {})
    assert response.status_code == 404
    assert "no loop &#39;nope&#39; is served" in response.text


def test_run_now_with_a_bad_input_shows_the_problem_beside_its_field(console: Console) -> None:
    response = console.post("/console/loops/counted/run", {"in.n": "ten"})
    assert response.status_code == 422
    section = _loop_section(response.text, "counted")
    assert 'id="in-counted-n-error"' in section
    assert "&#39;ten&#39; is not of type &#39;integer&#39;" in section
    assert 'value="ten"' in section
    assert '<details class="run" open>' in section


def test_run_now_queues_a_run_that_appears_and_completes(served: Served, console: Console) -> None:
    response = console.post("/console/loops/counted/run", {"in.n": "3"})
    assert response.status_code == 303
    assert response.headers["location"] == "/console/executions?loop_id=counted"

    def completed() -> list[dict[str, Any]]:
        runs = served.workspace.json("history", "counted")["executions"]
        return [run for run in runs if run["outcome"] == "completed"]

    run = wait_until(completed, "the run never completed")[0]
    assert served.workspace.json("show", run["execution_id"])["job"]["payload"] == {"n": 3}
    listing = console.http.get(response.headers["location"]).text
    assert f"/console/executions/{run['execution_id']}" in listing
    strip = _loop_section(console.http.get("/").text, "counted")
    assert f'href="/console/executions/{run["execution_id"]}"' in strip


def test_a_dry_run_from_the_form_is_a_dry_run(served: Served, console: Console) -> None:
    assert console.post("/console/loops/says/run", {"dry_run": "on"}).status_code == 303

    def dry() -> list[dict[str, Any]]:
        runs = served.workspace.json("history", "says")["executions"]
        return [run for run in runs if run["outcome"] == "dry_run"]

    wait_until(dry, "no dry run")


def test_run_now_of_a_paused_loop_says_why_it_did_not_run(console: Console) -> None:
    assert console.post("/console/loops/from_file/pause", {}).status_code == 303
    try:
        response = console.post("/console/loops/from_file/run", {})
        assert response.status_code == 409
        assert "did not queue the job" in _loop_section(response.text, "from_file")
    finally:
        console.post("/console/loops/from_file/unpause", {})


def test_a_param_with_choices_is_a_select_of_them(console: Console) -> None:
    section = _loop_section(console.http.get("/").text, "says")
    mode = section.split('id="in-says-mode"')[1].split("</select>")[0]
    assert '<option value="fast">fast</option>' in mode
    assert '<option value="slow &lt;b&gt;">slow &lt;b&gt;</option>' in mode
    loud = section.split('id="in-says-loud"')[1].split("</select>")[0]
    assert '<option value="true">true</option>' in loud
    assert '<option value="false">false</option>' in loud


def test_choices_chosen_in_the_form_reach_the_run(served: Served, console: Console) -> None:
    chosen = {"in.mode": "slow <b>", "in.loud": "true", "in.text": "chosen"}
    assert console.post("/console/loops/says/run", chosen).status_code == 303

    def ran() -> list[dict[str, Any]]:
        runs = served.workspace.json("history", "says")["executions"]
        shown = [served.workspace.json("show", run["execution_id"]) for run in runs[:3]]
        return [run for run in shown if run["job"]["payload"].get("text") == "chosen"]

    payload = wait_until(ran, "the chosen run never ran")[0]["job"]["payload"]
    assert payload == {"mode": "slow <b>", "loud": True, "text": "chosen"}


def test_a_choice_not_offered_is_refused_beside_its_field(console: Console) -> None:
    response = console.post("/console/loops/says/run", {"in.mode": "medium"})
    assert response.status_code == 422
    assert 'id="in-says-mode-error"' in _loop_section(response.text, "says")


def test_running_a_loop_this_daemon_does_not_serve_is_a_404(console: Console) -> None:
    response = console.post("/console/loops/nope/run", {})
    assert response.status_code == 404
    assert "does not serve a loop &#39;nope&#39;" in response.text
