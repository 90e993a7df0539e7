"""Detect, analyze, validate, learn and store, each on its own terms."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loopengine.contract import Outcome
from loopengine.store import learning, queue, signals
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness

pytestmark = pytest.mark.anyio


async def test_metric_source_with_aggregation(harness: Harness) -> None:
    now = time.time()
    for value in (2, 3, 5):
        await harness.store.write(
            lambda c, v=value: signals.insert_metric(c, "seo.violations.count", v, now, {})
        )
    loop = harness.loop(
        "id: metrics\ndomain: SEO\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: metric, name: seo.violations.count, freshness_hours: 1}\n"
        "  conditions:\n    - {expression: 'violations.count >= 10', aggregation: sum}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.COMPLETED


async def test_metric_source_publishes_the_latest_value(harness: Harness) -> None:
    await harness.store.write(
        lambda c: signals.insert_metric(c, "seo.violations.count", 4, time.time(), {})
    )
    loop = harness.loop(
        "id: metrics\ndomain: SEO\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: metric, name: seo.violations.count}\n"
        "  conditions:\n    - {expression: 'violations.count == `4`'}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_a_stale_source_is_recorded(harness: Harness) -> None:
    old = time.time() - 7200
    await harness.store.write(lambda c: signals.insert_metric(c, "queue.depth", 1, old, {}))
    loop = harness.loop(
        "id: stale\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: metric, name: queue.depth, freshness_hours: 1, as: depth}\n"
        "  conditions:\n    - {expression: 'detect.\"queue.depth\".stale'}\n"
    )
    done = await harness.engine.run(loop)
    view = await harness.view(done)
    assert harness.phase(view, "detect")["data"]["stale"] == ["depth"]


async def test_a_skill_source_merges_into_the_root_and_as_names_it(harness: Harness) -> None:
    loop = harness.loop(
        "id: sourced\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {skill: report, name: pages, as: found, params: {values: {count: 3}}}\n"
        "  conditions:\n    - {expression: 'found.count == `3`'}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_alert_source_reads_the_firing_thresholds_whose_metric_matches(
    harness: Harness,
) -> None:
    state = {"state": "firing", "value": 97.0, "since": 5.0, "armed": True}
    for trigger_id, metric in (("hot", "cpu.load"), ("full", "disk.used")):
        row = {"loop_id": "watch", "trigger_id": trigger_id, "metric": metric, **state}
        saved = queue.TriggerState(**row, cleared_at=None, evaluated_at=6.0)
        await harness.store.write(queue.save_trigger_state, saved)
    loop = harness.loop(
        "id: alerted\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: alert, name: 'cpu.*', as: hot}\n"
        "  conditions:\n    - {expression: 'hot.count == `1`'}\n"
    )
    done = await harness.engine.run(loop)
    alerts = harness.phase(await harness.view(done), "detect")["data"]["sources"]["hot"]["alerts"]
    assert alerts == [
        {
            "loop_id": "watch",
            "trigger_id": "hot",
            "metric": "cpu.load",
            "state": "firing",
            "value": 97.0,
            "since": 5.0,
            "armed": True,
            "cleared_at": None,
            "evaluated_at": 6.0,
        }
    ]


async def test_the_audit_log_source_reads_the_loops_audit_records(harness: Harness) -> None:
    loop = harness.loop(
        "id: audited\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: log, name: audit, as: trail}\n"
        "  conditions:\n    - expression: >-\n"
        "        length(trail.lines) == `1` && trail.latest_at == trail.lines[0].created_at\n"
        "        && trail.lines[0].record == {outcome: 'nothing_detected'}\n"
        "store:\n  audit_trail: {fields: [outcome]}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.NOTHING_DETECTED
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_event_source_reads_matching_events(harness: Harness) -> None:
    now = time.time()
    await harness.store.write(
        lambda c: signals.insert_event(c, "seo.page.updated", "cms", {"url": "/"}, now)
    )
    await harness.store.write(lambda c: signals.insert_event(c, "billing.paid", "cms", {}, now))
    loop = harness.loop(
        "id: evented\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: event, name: 'seo.**', as: updates}\n"
        "  conditions:\n    - {expression: 'updates.count == `1`'}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_log_source_reads_a_file(harness: Harness) -> None:
    (harness.tmp / "app.log").write_text("ok\nERROR disk full\nok\nERROR again\n")
    loop = harness.loop(
        "id: logs\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: log, name: app.log, filter: ERROR, as: errors}\n"
        "  conditions:\n    - {expression: 'errors.count == `2`'}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_database_source_runs_a_read_only_select(harness: Harness) -> None:
    import sqlite3

    path = harness.tmp / "site.db"
    with sqlite3.connect(path) as db:
        db.execute("create table pages (url text, updated_at text)")
        db.executemany(
            "insert into pages values (?, ?)", [("/a", "2026-01-01"), ("/b", "2020-01-01")]
        )
    harness.engine.services.config = harness.config.model_copy(
        update={"databases": {"default": f"sqlite:///{path}"}}
    )
    loop = harness.loop(
        "id: pages\ntrigger: {type: manual}\ndetect:\n  sources:\n"
        "    - {type: database, name: pages, filter: \"updated_at > '2025-01-01'\", as: recent}\n"
        "  conditions:\n    - {expression: 'recent.count == `1`'}\n"
    )
    assert (await harness.engine.run(loop)).outcome is Outcome.COMPLETED


async def test_analysis_confidence_is_the_minimum_of_the_steps(harness: Harness) -> None:
    loop = harness.loop(
        "id: confident\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: a, skill_id: report, params: {confidence: 0.9}}\n"
        "    - {name: b, skill_id: report, params: {confidence: 0.6}}\n"
        "decide:\n  decision_tree:\n    - {condition: 'true', action: log_only, confidence_required: 0.8}\n"
        "    - {condition: 'true', action: notify}\n"
    )
    done = await harness.engine.run(loop)
    decision = (await harness.view(done))["decision"]
    assert (decision["action"], decision["confidence"]) == ("notify", 0.6)
    assert decision["skipped_low_confidence"] == [
        {"rule": 0, "action": "log_only", "required": 0.8}
    ]


async def test_context_is_cached_for_its_ttl(harness: Harness) -> None:
    loop = harness.loop(
        "id: cached\ntrigger: {type: manual}\nanalyze:\n  context_required:\n"
        "    - {context_type: rules, source: report, ttl_seconds: 3600}\n"
    )
    await harness.engine.run(loop)
    await harness.engine.run(loop)
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["report"]


async def test_retry_on_fail_reruns_act(harness: Harness) -> None:
    loop = harness.loop(
        "id: retrying\ntrigger: {type: manual}\ndecide: {fallback_action: fix_all}\n"
        "act:\n  actions:\n    - {action_id: fix, skill_id: fix, params: {after: 9}}\n"
        "validate:\n  assertions:\n    - {expression: 'violations.after < `5`', retry_on_fail: true, max_retries: 2}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.FAILED
    assert len([c for c in skills_for_tests.CALLS if c["skill"] == "fix"]) == 3


async def test_success_criteria_are_recorded(harness: Harness) -> None:
    loop = harness.loop(
        "id: criteria\ntrigger: {type: manual}\ndecide: {fallback_action: fix_all}\n"
        "act:\n  actions:\n    - {action_id: fix, skill_id: fix, params: {after: 0}}\n"
        "validate:\n  success_criteria:\n    - {metric: violations.after, operator: '<=', expected: 0}\n"
    )
    view = await harness.view(await harness.engine.run(loop))
    assert harness.phase(view, "validate")["data"]["criteria"] == [
        {"metric": "violations.after", "operator": "<=", "expected": 0.0, "value": 0, "met": True}
    ]


async def test_rollback_runs_in_reverse_order(harness: Harness) -> None:
    loop = harness.loop(
        "id: undo_all\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: p, skill_id: report, params: {values: {pages: [1, 2, 3], violations: {before: 1}}}}\n"
        "decide: {fallback_action: fix_all}\n"
        "act:\n  actions:\n    - {action_id: fix, skill_id: fix, items: pages, max_affected: 5, params: {after: 9},"
        " rollback_skill: undo, rollback_params: {item: '${ item }'}}\n"
        "validate:\n  assertions:\n    - {expression: 'violations.after <= violations.before'}\n"
        "  auto_rollback: {enabled: true}\n"
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.ROLLED_BACK
    assert [c["item"] for c in skills_for_tests.CALLS if c["skill"] == "undo"] == [3, 2, 1]


async def test_learn_moves_state_toward_the_score_after_min_samples(harness: Harness) -> None:
    loop = harness.loop(
        "id: learner\ntrigger: {type: manual}\nlearn:\n  feedback_sources:\n"
        "    - {type: outcome, name: ok, weight: 1}\n"
        "  learning_config: {rate: 0.5, max_adjustment: 0.2, min_samples: 2}\n"
        "  adjust:\n    - {name: threshold, target: '`10`', initial: 0, max: 5}\n"
        "act:\n  actions: []\n"
    )
    first = await harness.view(await harness.engine.run(loop))
    assert harness.phase(first, "learn")["data"]["not_learned"].startswith("1 of 2 samples")
    second = await harness.view(await harness.engine.run(loop))
    update = harness.phase(second, "learn")["data"]["update"]
    assert update["threshold"] == {"from": 0.0, "to": 0.2, "target": 10}
    state = await harness.store.read(learning.get_state, "learner")
    assert state is not None
    assert state.values["threshold"] == 0.2


async def test_low_confidence_never_teaches_and_is_queued_for_review(harness: Harness) -> None:
    loop = harness.loop(
        "id: careful\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: a, skill_id: report, params: {confidence: 0.3}}\n"
        "decide: {fallback_action: log_only}\n"
        "learn:\n  anti_hallucination: {enabled: true, confidence_floor: 0.7, human_review_threshold: 0.5}\n"
    )
    view = await harness.view(await harness.engine.run(loop))
    data = harness.phase(view, "learn")["data"]
    assert data["not_learned"] == "confidence 0.3 below the floor 0.7"
    assert "review_queued" in data


async def test_store_writes_artifacts_and_the_audit_record_with_exactly_its_fields(
    harness: Harness,
) -> None:
    loop = harness.loop(
        "id: storing\ntrigger: {type: manual}\ndecide: {fallback_action: log_only}\n"
        "store:\n  artifacts:\n    - {type: decision, name: report, storage: file, retention_days: 7}\n"
        "    - {type: outcome, name: summary, storage: sqlite}\n"
        "  audit_trail:\n    enabled: true\n    fields: [loop_id, decision_made, outcome]\n"
    )
    view = await harness.view(await harness.engine.run(loop))
    store = harness.phase(view, "store")["data"]
    assert store["audit"] == {
        "loop_id": "storing",
        "decision_made": "log_only",
        "outcome": "completed",
    }
    report = next(a for a in view["artifacts"] if a["name"] == "report")
    assert json.loads(Path(report["location"]).read_text())["action"] == "log_only"
    summary = next(a for a in view["artifacts"] if a["name"] == "summary")
    assert summary["location"].startswith("sqlite:///")


async def test_an_unconfigured_storage_fails_the_artifact_clearly(harness: Harness) -> None:
    loop = harness.loop(
        "id: lost\ntrigger: {type: manual}\ndecide: {fallback_action: log_only}\n"
        "store:\n  artifacts:\n    - {type: audit, name: report, storage: supabase}\n",
    )
    done = await harness.engine.run(loop)
    assert done.outcome is Outcome.FAILED
    assert "storage 'supabase' is not configured" in (done.error or "")


async def test_rollback_stops_at_its_time_limit(harness: Harness) -> None:
    loop = harness.loop(
        "id: slow_undo\ntrigger: {type: manual}\ndecide: {fallback_action: fix_all}\n"
        "act:\n  actions:\n    - {action_id: fix, skill_id: fix, params: {after: 9}, rollback_skill: slow, rollback_params: {seconds: 5}}\n"
        "validate:\n  assertions:\n    - {expression: 'violations.after < `5`'}\n"
        "  auto_rollback: {enabled: true, max_rollback_time_ms: 100}\n"
    )
    started = time.monotonic()
    done = await harness.engine.run(loop)
    assert time.monotonic() - started < 3
    assert done.outcome is Outcome.FAILED
    assert "rollback did not finish within 100 ms" in (done.error or "")


async def test_no_adjustment_within_the_cooldown(harness: Harness) -> None:
    loop = harness.loop(
        "id: cooling\ntrigger: {type: manual}\nlearn:\n  feedback_sources: [{type: outcome, name: ok}]\n"
        "  learning_config: {rate: 0.5, cooldown_hours: 1}\nact:\n  actions: []\n"
    )
    first = await harness.view(await harness.engine.run(loop))
    assert "update" in harness.phase(first, "learn")["data"]
    second = await harness.view(await harness.engine.run(loop))
    assert harness.phase(second, "learn")["data"]["not_learned"].startswith("cooldown")


async def test_emitted_events_are_stored_on_matching_outcomes(harness: Harness) -> None:
    loop = harness.loop(
        "id: emitter\ntrigger: {type: manual}\ndecide: {fallback_action: log_only}\n"
        "emit:\n  - {on: [completed], event: emitter.done, data: {loop: '${ loop.id }'}}\n"
        "  - {on: [failed], event: emitter.failed}\n"
    )
    done = await harness.engine.run(loop)
    events = await harness.store.read(signals.recent_events, 0)
    assert [(e.name, e.data) for e in events] == [
        (
            "emitter.done",
            {"loop": "emitter", "execution_id": done.execution_id, "outcome": "completed"},
        )
    ]


async def test_learn_records_metric_points_with_labels(harness: Harness) -> None:
    loop = harness.loop(
        "id: recorder\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: p, skill_id: report, params: {values: {chat: {latency_ms: 120, node: OL1}}}}\n"
        "learn:\n  record:\n    - {metric: llm.latency_ms, value: chat.latency_ms, labels: {node: '${ chat.node }'}}\n"
        "    - {metric: llm.missing, value: chat.nothing}\n"
    )
    await harness.engine.run(loop)
    points = await harness.store.read(signals.metric_points, "llm.latency_ms", None)
    assert [(p.value, p.labels) for p in points] == [(120.0, {"node": "OL1"})]
