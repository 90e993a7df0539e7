"""An execution waiting for approval shows what a person approves: the decision and its rule, the
analysis, and each gated action's params as they resolve and the items it would affect; the
waiting ones are listed oldest first with the time left before they escalate."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from loopengine.contract import Outcome
from loopengine.skills import Registry
from loopengine.store import approvals
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness, open_harness

pytestmark = pytest.mark.anyio

PAGES = [f"p{n}" for n in range(70)]
GATED = f"""\
id: pruner
trigger: {{type: manual}}
analyze:
  analysis_steps:
    - {{name: scan, skill_id: report, params: {{values: {{stale: {{pages: {PAGES}}}}}}}}}
decide:
  decision_tree:
    - {{condition: "length(stale.pages) > `0`", action: prune}}
  human_approval: {{required_for: [prune], timeout_hours: 2}}
act:
  actions:
    - action_id: prune
      skill_id: fix
      items: ITEMS
      max_affected: 60
      params: {{after: "${{ length(stale.pages) }}", item: "${{ item }}"}}
"""


async def _waiting(harness: Harness, items: str = "stale.pages") -> dict[str, Any]:
    done = await harness.engine.run(harness.loop(GATED.replace("ITEMS", items)))
    assert done.outcome is Outcome.AWAITING_APPROVAL
    return await harness.view(done)


async def test_a_waiting_execution_shows_its_decision_and_rule(harness: Harness) -> None:
    decision = (await _waiting(harness))["decision"]
    assert (decision["action"], decision["rule"]) == ("prune", 0)
    assert decision["reason"] == "rule 0 holds: length(stale.pages) > `0`"


async def test_a_waiting_execution_shows_the_analysis(harness: Harness) -> None:
    assert (await _waiting(harness))["analysis"] == {"scan": {"stale": {"pages": PAGES}}}


async def test_the_plan_has_the_params_as_resolved_and_the_first_50_items_of_those_affected(
    harness: Harness,
) -> None:
    [step] = (await _waiting(harness))["plan"]
    assert step == {
        "action_id": "prune",
        "skill": "fix",
        "params": {"after": 70, "item": "p0"},
        "items": PAGES[:50],
        "count": 60,
    }
    assert [call["skill"] for call in skills_for_tests.CALLS] == ["report"]


async def test_an_action_whose_items_cannot_resolve_says_why_in_the_plan(
    harness: Harness,
) -> None:
    [step] = (await _waiting(harness, items="stale"))["plan"]
    assert step["error"] == "items of action 'prune' is dict, not a list"


async def test_waiting_executions_are_listed_oldest_first_with_the_time_left(
    tmp_path: Path, engine_registry: Registry
) -> None:
    moment = [1_000_000.0]
    async with open_harness(tmp_path, engine_registry, clock=lambda: moment[0]) as opened:
        first = await _waiting(opened)
        moment[0] += 60
        second = await _waiting(opened)
        listed = await opened.store.read(approvals.waiting, 1_003_600.0, 10)
    assert [w.execution_id for w in listed] == [first["execution_id"], second["execution_id"]]
    assert [w.time_left_s for w in listed] == [3600.0, 3660.0]
    assert (listed[0].plan, listed[0].decision) == (first["plan"], first["decision"])


async def test_an_approval_past_its_deadline_is_listed_as_overdue(harness: Harness) -> None:
    await _waiting(harness)
    later = time.time() + 3 * 3600
    [listed] = await harness.store.read(approvals.waiting, later, 10)
    assert (listed.overdue, listed.time_left_s) == (True, 0.0)
