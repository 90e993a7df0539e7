"""A dry run is shown as what it was: never `completed`, stopped at an approval gate as the real
run would wait there, and teaching nothing (no learn score, not the next run's `last_run`)."""

from __future__ import annotations

import pytest

from loopengine.contract import Outcome
from loopengine.store import approvals, executions, learning
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness

pytestmark = pytest.mark.anyio

LOOP = """\
id: fixer
trigger: {type: manual}
params:
  big: {type: boolean, default: false}
decide:
  decision_tree:
    - {condition: "input.big", action: fix_all}
  fallback_action: fix_some
  human_approval: {required_for: [fix_all]}
act:
  actions:
    - {action_id: fix_all, skill_id: fix}
    - {action_id: fix_some, skill_id: fix}
learn:
  feedback_sources:
    - {type: outcome, name: done, weight: 1}
"""


async def test_a_dry_run_that_ran_to_its_end_is_not_completed(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(LOOP), dry_run=True)
    view = await harness.view(done)
    assert (done.outcome, view["outcome"]) == (Outcome.DRY_RUN, "dry_run")


async def test_a_dry_run_feeds_no_learn_score(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(LOOP), dry_run=True)
    learn = harness.phase(await harness.view(done), "learn")
    assert learn["data"] == {"skipped": "a dry run feeds no learn score"}
    assert await harness.store.read(learning.get_state, "fixer") is None


async def test_a_dry_run_stops_where_the_real_run_would_wait_for_approval(
    harness: Harness,
) -> None:
    done = await harness.engine.run(harness.loop(LOOP), inputs={"big": True}, dry_run=True)
    view = await harness.view(done)
    decide = harness.phase(view, "decide")
    assert (done.outcome, decide["outcome"]) == (Outcome.DRY_RUN, "dry_run")
    assert decide["data"]["note"] == "would wait for approval"
    assert harness.phase(view, "act")["data"] == {"skipped": "execution ended: dry_run"}
    assert [c["skill"] for c in skills_for_tests.CALLS] == []
    assert await harness.store.read(approvals.get_approval, done.execution_id) is None


@pytest.mark.parametrize("learns", [True, False], ids=["with learn", "without learn"])
async def test_a_dry_run_is_not_the_last_run_of_the_next_one(
    harness: Harness, learns: bool
) -> None:
    loop = harness.loop(LOOP if learns else LOOP[: LOOP.index("learn:")])
    first = await harness.view(await harness.engine.run(loop))
    await harness.engine.run(loop, dry_run=True)
    done = await harness.engine.run(loop)
    row = await harness.store.read(lambda c: executions.get_execution(c, done.execution_id))
    assert row is not None
    assert row.context["data"]["last_run"]["completed_at"] == first["completed_at"]


async def test_a_dry_run_whose_store_phase_fails_ends_failed_and_its_audit_says_so(
    harness: Harness,
) -> None:
    loop = harness.loop(
        "id: lost\ntrigger: {type: manual}\ndecide: {fallback_action: log_only}\n"
        "store:\n  artifacts:\n    - {type: audit, name: report, storage: supabase}\n"
        "  audit_trail: {enabled: true, fields: [outcome]}\n"
    )
    done = await harness.engine.run(loop, dry_run=True)
    store = harness.phase(await harness.view(done), "store")
    assert (done.outcome, store["data"]["audit"]) == (Outcome.FAILED, {"outcome": "failed"})
