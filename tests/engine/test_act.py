"""Act: which actions a decision runs, bounded items, execution modes, flags, dry runs, rollbacks;
what each call returned, kept in its record and read as ``act.<action_id>.result``."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from loopengine.contract import Outcome
from loopengine.engine._results import MAX_RESULT_BYTES
from loopengine.skills import Registry
from loopengine.store import flags
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness, open_harness

pytestmark = pytest.mark.anyio


def _loop(actions: str, *, decided: str = "fix_all", act_extra: str = "", data: str = "{}") -> str:
    return f"""\
id: acting
trigger: {{type: manual}}
analyze:
  analysis_steps:
    - {{name: probe, skill_id: report, params: {{values: {data}}}}}
decide:
  fallback_action: {decided}
act:
{act_extra}  actions:
{actions}"""


def _fix_calls() -> list[dict[str, object]]:
    return [c for c in skills_for_tests.CALLS if c["skill"] == "fix"]


async def test_an_action_id_runs_that_action(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: fix_all, skill_id: fix}\n    - {action_id: other, skill_id: undo}\n"
        )
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["report", "fix"]


async def test_tagged_actions_run_on_their_decision(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fix, on: [fix_all]}\n    - {action_id: b, skill_id: undo, on: [other]}\n    - {action_id: c, skill_id: undo}\n"
        )
    )
    await harness.engine.run(loop)
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["report", "fix"]


async def test_a_decision_runs_the_action_of_its_id_and_every_action_tagged_with_it(
    harness: Harness,
) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: tidy, skill_id: undo, on: [fix_all]}\n"
            "    - {action_id: fix_all, skill_id: fix}\n"
            "    - {action_id: other, skill_id: report, on: [elsewhere]}\n"
        )
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["report", "undo", "fix"]


async def test_a_null_inside_text_fails_the_call_instead_of_becoming_empty(
    harness: Harness,
) -> None:
    loop = harness.loop(
        _loop(
            '    - {action_id: fix_all, skill_id: undo, params: {item: "rm -rf ${ input.dir }/*"}}\n'
        )
        + "params:\n  dir: {type: string}\n"
    )
    result = await harness.engine.run(loop)
    assert result.outcome is Outcome.FAILED
    assert "missing value for ${ input.dir } (null inside text)" in (result.error or "")
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["report"]


async def test_an_unmatched_decision_runs_the_untagged_actions(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: a, skill_id: fix}\n", decided="auto_fix_batch"))
    await harness.engine.run(loop)
    assert len(_fix_calls()) == 1


async def test_a_builtin_decision_runs_the_builtin(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: a, skill_id: fix, on: [x]}\n", decided="log_only"))
    done = await harness.engine.run(loop)
    view = await harness.view(done)
    assert harness.phase(view, "act")["data"]["builtin"] == "log_only"
    assert _fix_calls() == []


async def test_items_are_bounded_by_max_affected(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fix, items: 'pages', max_affected: 3, params: {item: '${ item }'}}\n",
            data="{pages: [1, 2, 3, 4, 5]}",
        )
    )
    done = await harness.engine.run(loop)
    assert [c["item"] for c in _fix_calls()] == [1, 2, 3]
    action = harness.phase(await harness.view(done), "act")["data"]["actions"][0]
    assert (action["items"], action["affected"], action["truncated"]) == (5, 3, True)


async def test_batch_mode_calls_once_per_batch(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fix, items: 'pages', max_affected: 10, params: {batch: '${ batch }'}}\n",
            act_extra="  execution_mode: batch\n  batch_size: 2\n",
            data="{pages: [1, 2, 3, 4, 5]}",
        )
    )
    await harness.engine.run(loop)
    assert [c["batch"] for c in _fix_calls()] == [[1, 2], [3, 4], [5]]


async def test_parallel_mode_runs_every_item(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fix, items: 'pages', max_affected: 10, params: {item: '${ item }'}}\n",
            act_extra="  execution_mode: parallel\n",
            data="{pages: [1, 2, 3]}",
        )
    )
    await harness.engine.run(loop)
    assert sorted(c["item"] for c in _fix_calls()) == [1, 2, 3]


async def test_idempotency_keys_are_stable_per_item(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fix, items: 'pages', max_affected: 10, params: {item: '${ item }'}}\n",
            data="{pages: [7, 8]}",
        )
    )
    done = await harness.engine.run(loop)
    assert [c["key"] for c in _fix_calls()] == [
        f"{done.execution_id}:act:a:0:1",
        f"{done.execution_id}:act:a:1:1",
    ]


async def test_a_flag_that_is_off_skips_the_action(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: a, skill_id: fix, feature_flag: seo_auto_fix}\n"))
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.NO_ACTION
    assert _fix_calls() == []


async def test_a_flag_that_is_on_lets_the_action_run(harness: Harness) -> None:
    await harness.store.write(lambda c: flags.set_flag(c, "seo_auto_fix", True, time.time()))
    loop = harness.loop(_loop("    - {action_id: a, skill_id: fix, feature_flag: seo_auto_fix}\n"))
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED
    assert len(_fix_calls()) == 1


async def test_dry_run_first_runs_a_dry_run_before_the_real_one(harness: Harness) -> None:
    loop = harness.loop(
        _loop("    - {action_id: a, skill_id: fix}\n", act_extra="  dry_run_first: true\n")
    )
    await harness.engine.run(loop)
    assert [c["dry_run"] for c in _fix_calls()] == [True, False]


async def test_a_failed_dry_run_changes_nothing(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: fail_on_dry_run}\n", act_extra="  dry_run_first: true\n"
        )
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.FAILED
    assert [c["dry_run"] for c in skills_for_tests.CALLS if c["skill"] == "fail_on_dry_run"] == [
        True
    ]


async def test_the_dry_run_option_only_dry_runs(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: a, skill_id: fix, rollback_skill: undo}\n"))
    done = await harness.engine.run(loop, dry_run=True)
    assert done.outcome is Outcome.DRY_RUN
    assert [c["dry_run"] for c in _fix_calls()] == [True]


async def test_a_sync_skill_runs_in_a_thread(harness: Harness) -> None:
    loop = harness.loop(
        _loop(
            "    - {action_id: a, skill_id: sync_count, params: {items: '${ pages }'}}\n",
            data="{pages: [1, 2]}",
        )
    )
    done = await harness.engine.run(loop)
    view = await harness.view(done)
    assert view["outcome"] == "completed"
    assert harness.phase(view, "act")["data"]["calls"][0]["skill"] == "sync_count"


async def test_each_action_call_keeps_what_its_skill_returned(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: fix, skill_id: fix, params: {after: 3}}\n"))
    act = harness.phase(await harness.view(await harness.engine.run(loop)), "act")
    [call] = act["data"]["calls"]
    assert {key: call[key] for key in ("step", "ok", "attempts", "result")} == {
        "step": "fix",
        "ok": True,
        "attempts": 1,
        "result": {"violations": {"after": 3}},
    }


async def test_a_result_over_16_kib_is_cut_with_a_marker(harness: Harness) -> None:
    loop = harness.loop(_loop("    - {action_id: big, skill_id: sized, params: {size: 40000}}\n"))
    act = harness.phase(await harness.view(await harness.engine.run(loop)), "act")
    result = act["data"]["calls"][0]["result"]
    assert result.startswith('{"text":"xxx')
    assert re.search(r"… \[cut: 40,011 bytes as JSON, the first 16,\d{3} kept\]$", result)
    assert len(json.dumps(result, ensure_ascii=False).encode()) <= MAX_RESULT_BYTES


async def test_validate_reads_an_actions_result(harness: Harness) -> None:
    validate = (
        "validate:\n  assertions:\n    - {expression: 'act.fix.result.violations.after == `3`'}\n"
    )
    loop = harness.loop(
        _loop("    - {action_id: fix, skill_id: fix, params: {after: 3}}\n" + validate)
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_an_action_over_items_has_one_result_per_call(harness: Harness) -> None:
    validate = "validate:\n  assertions:\n    - {expression: 'length(act.fix.result) == `2`'}\n"
    loop = harness.loop(
        _loop(
            "    - {action_id: fix, skill_id: fix, items: pages, max_affected: 5, params: {after: 1}}\n"
            + validate,
            data="{pages: [1, 2]}",
        )
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_a_rollback_reads_what_the_action_returned(harness: Harness) -> None:
    actions = (
        "    - {action_id: fix, skill_id: fix, params: {after: 7}, rollback_skill: undo,"
        " rollback_params: {item: '${ act.fix.result.violations.after }'}}\n"
    )
    validate = (
        "validate:\n  assertions:\n    - {expression: 'violations.after < `5`'}\n"
        "  auto_rollback: {enabled: true}\n"
    )
    done = await harness.engine.run(harness.loop(_loop(actions + validate)))
    assert done.outcome is Outcome.ROLLED_BACK
    assert [c["item"] for c in skills_for_tests.CALLS if c["skill"] == "undo"] == [7]


async def test_a_secret_an_action_returns_is_masked_in_its_record(
    tmp_path: Path, engine_registry: Registry
) -> None:
    canary = "act-result-canary-5f1e9b"
    async with open_harness(tmp_path, engine_registry, environ={"ACT_TOKEN": canary}) as opened:
        loop = opened.loop(
            _loop(
                "    - {action_id: tell, skill_id: secretive,"
                " params: {token: '${ secret.ACT_TOKEN }'}}\n"
            )
        )
        act = opened.phase(await opened.view(await opened.engine.run(loop)), "act")
    result = act["data"]["calls"][0]["result"]
    assert result["echo"] == "token=***"
    assert canary not in json.dumps(result)
