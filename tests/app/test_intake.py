"""A firing becomes a queued job, or a non-run with its reason, as the loop's overlap policy
says; decided in the transaction that writes it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loopengine.app import Firing
from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.store import Store, intake, queue
from loopengine.testing import memory_store


def loop_with(concurrency: str) -> Loop:
    text = (
        "id: job\ntrigger: {type: manual}\n"
        f"concurrency: {concurrency}\n"
        "decide: {decision_tree: [], fallback_action: log_only}\n"
    )
    report = LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x")
    assert report.loop is not None, report.diagnostics
    return report.loop


def firing(loop: Loop, key: str, slot: float | None = None) -> Firing:
    trigger = {"type": "cron", "id": "cron"} if slot is not None else {"type": "manual"}
    return Firing(loop, trigger, key, slot=slot)


def enqueue(firing: Firing, now: float, *, paused: bool = False) -> Any:
    """``intake.enqueue`` of ``firing``, for ``Store.write``."""
    return lambda c: intake.enqueue(c, firing.arrival(now), now, paused=paused)


def claim(job_id: str | None) -> Any:
    """``queue.claim_job`` of the job ``job_id``, for ``Store.write``."""
    return lambda c: queue.claim_job(c, queue.get_job(c, str(job_id)), "me", 99.0)


def run_firings(
    loop: Loop, count: int, running: int = 0
) -> tuple[list[intake.Intake], dict[str, Any]]:
    """Fire ``count`` times while ``running`` jobs of the loop run; the intakes and job counts."""

    async def scenario(store: Store) -> tuple[list[intake.Intake], dict[str, Any]]:
        intakes = []
        for index in range(count):
            taken = await store.write(enqueue(firing(loop, f"k{index}"), 1.0))
            intakes.append(taken)
            if index < running:
                await store.write(claim(taken.job_id))
        counts = await store.read(queue.queue_depth)
        return intakes, counts

    async def main() -> tuple[list[intake.Intake], dict[str, Any]]:
        async with memory_store() as store:
            return await scenario(store)

    return asyncio.run(main())


def test_a_free_loop_queues_the_job() -> None:
    [intake], depth = run_firings(loop_with("{max: 1}"), 1)
    assert intake.status == "queued"
    assert depth == {"queued": 1, "running": 0}


def test_skip_records_the_fire_that_overlaps() -> None:
    intakes, _ = run_firings(loop_with("{max: 1, on_overlap: skip}"), 2, running=1)
    assert [i.status for i in intakes] == ["queued", "skipped"]
    assert "overlap" in str(intakes[1].reason)


def test_queue_one_keeps_a_single_waiting_job() -> None:
    intakes, depth = run_firings(loop_with("{max: 1, on_overlap: queue_one}"), 4, running=1)
    assert [i.status for i in intakes] == ["queued", "queued", "skipped", "skipped"]
    assert depth == {"queued": 1, "running": 1}


def test_queue_stops_at_max_queue() -> None:
    intakes, depth = run_firings(loop_with("{max: 1, on_overlap: queue, max_queue: 2}"), 5, 1)
    assert [i.status for i in intakes] == ["queued"] * 3 + ["skipped"] * 2
    assert depth == {"queued": 2, "running": 1}


def test_replace_drops_the_older_waiting_job_and_cancels_the_running_one() -> None:
    intakes, depth = run_firings(loop_with("{max: 1, on_overlap: replace}"), 3, running=1)
    assert [i.status for i in intakes] == ["queued"] * 3
    assert depth == {"queued": 1, "running": 1}


def test_a_repeated_idempotency_key_is_a_duplicate() -> None:
    loop = loop_with("{max: 5, on_overlap: parallel}")

    async def main() -> list[str]:
        async with memory_store() as store:
            return [
                (await store.write(enqueue(firing(loop, "same"), 1.0))).status for _ in range(2)
            ]

    assert asyncio.run(main()) == ["queued", "duplicate"]


@pytest.mark.parametrize("paused", [True, False])
def test_a_cron_slot_is_recorded_once_run_or_not(paused: bool) -> None:
    loop = loop_with("{max: 1}")

    async def main() -> tuple[list[str], list[Any]]:
        async with memory_store() as store:
            statuses = [
                (await store.write(enqueue(firing(loop, "slot", 60.0), 61.0, paused=paused))).status
                for _ in range(2)
            ]
            rows = await store.read(
                lambda c: c.exec_driver_sql("SELECT status, reason FROM ticks").all()
            )
            return statuses, [tuple(row) for row in rows]

    statuses, rows = asyncio.run(main())
    expected = ("paused", "the loop is paused") if paused else ("queued", None)
    assert statuses == [expected[0], "duplicate"]
    assert rows == [expected]


def test_a_firing_in_a_senders_trace_gives_its_envelope_that_trace_id() -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    trigger = {"type": "manual", "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
    job = Firing(loop_with("{max: 1}"), trigger, "k").arrival(1.0).job
    assert job.envelope["trace_id"] == trace_id
