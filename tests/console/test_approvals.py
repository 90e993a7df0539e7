"""The approvals page: what waits, oldest first, with its plan and the time left before it
escalates, approved or rejected in place."""

from __future__ import annotations

import pytest

from loopengine.console._pages import time_left
from tests.console.conftest import Console, Served
from tests.console.test_executions import _run


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.0, "overdue"),
        (-5.0, "overdue"),
        (0.2, "1 s left"),
        (42.4, "42 s left"),
        (3_599.0, "59 min left"),
        (3_720.0, "1 h 2 min left"),
        (90_000.0, "1 d 1 h left"),
        (86_460.0, "1 d 1 min left"),
    ],
)
def test_the_time_left_is_said_as_people_say_it(seconds: float, said: str) -> None:
    assert time_left(seconds) == said


def _waiting(served: Served, n: int) -> str:
    run = _run(served, "gated", f"n={n}")
    assert run["outcome"] == "awaiting_approval"
    return str(run["execution_id"])


def test_what_waits_is_listed_oldest_first_with_its_plan(served: Served, console: Console) -> None:
    older, newer = _waiting(served, 21), _waiting(served, 22)
    page = console.http.get("/console/approvals").text
    assert 0 < page.index(older) < page.index(newer)
    assert "<h3>Plan</h3>" in page
    assert "big one" in page
    assert " left</span>" in page
    assert 'aria-current="page">Approvals</a>' in page


def test_approve_in_place_runs_the_action_and_leaves_the_list(
    served: Served, console: Console
) -> None:
    waits = _waiting(served, 23)
    answer = {"decision": "approve", "note": "ok", "back": "approvals"}
    response = console.post(f"/console/executions/{waits}/answer", answer)
    assert response.status_code == 303
    assert response.headers["location"] == "/console/approvals"
    assert served.workspace.json("show", waits)["outcome"] == "completed"
    assert waits not in console.http.get("/console/approvals").text


def test_reject_in_place(served: Served, console: Console) -> None:
    waits = _waiting(served, 24)
    answer = {"decision": "reject", "back": "approvals"}
    response = console.post(f"/console/executions/{waits}/answer", answer)
    assert response.headers["location"] == "/console/approvals"
    assert served.workspace.json("show", waits)["outcome"] == "rejected"


def test_an_answer_posted_from_another_site_is_refused(served: Served, console: Console) -> None:
    waits = _waiting(served, 25)
    fields = {"csrf": console.csrf("/console/approvals"), "decision": "approve"}
    response = console.http.post(
        f"/console/executions/{waits}/answer", data=fields, headers={"Origin": "http://evil.test"}
    )
    assert response.status_code == 403
    assert served.workspace.json("show", waits)["outcome"] == "awaiting_approval"


def test_the_approvals_page_needs_a_session(anonymous: Console) -> None:
    response = anonymous.http.get("/console/approvals")
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fconsole%2Fapprovals"
