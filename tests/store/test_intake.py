"""The intake's units of work: what a firing becomes is written with what it depends on (a held
webhook body, a threshold's saved state, the log cursor) in one transaction."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from loopengine.store import JobEnvelope, Store, intake, queue
from loopengine.testing import memory_store


@dataclass(frozen=True)
class Start:
    action: str = "start"
    reason: str | None = None


def arrival(key: str, loop_id: str = "tick", trigger_id: str = "t") -> intake.Arrival:
    job_id = uuid.uuid4().hex
    job = queue.Job(
        id=job_id,
        loop_id=loop_id,
        trigger={"type": "manual", "id": trigger_id},
        envelope=JobEnvelope(job_id, job_id, loop_id, {}, {}, {}, key).as_dict(),
        idempotency_key=key,
        status=queue.QUEUED,
        not_before=1.0,
        created_at=1.0,
    )
    return intake.Arrival(job, trigger_id, lambda running, queued: Start())


def scenario(steps: Callable[[Store], Any]) -> Any:
    async def main() -> Any:
        async with memory_store() as store:
            return await steps(store)

    return asyncio.run(main())


def test_a_body_held_by_another_delivery_answers_with_that_ones_job() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        first = await store.write(intake.enqueue_body, "body", arrival("a"), 1.0, 300.0)
        second = await store.write(intake.enqueue_body, "body", arrival("b"), 2.0, 300.0)
        return first, second, await store.read(queue.queue_depth)

    (first, first_job), (second, second_job), depth = scenario(steps)
    assert (first.status, second.status) == ("queued", "duplicate")
    assert first_job == second_job
    assert depth["queued"] == 1


def test_a_threshold_another_daemon_saved_as_firing_is_not_queued_again() -> None:
    firing = queue.TriggerState("tick", "t", "cpu", "firing", 0.9, 1.0, True, None, 1.0)

    async def steps(store: Store) -> tuple[Any, ...]:
        await store.write(queue.save_trigger_state, firing)
        done = await store.write(intake.fire_thresholds, [], [arrival("a")], 2.0, ("m", 7))
        return done, await store.read(queue.queue_depth), await store.read(queue.cursor, "m")

    done, depth, position = scenario(steps)
    assert done == []
    assert depth["queued"] == 0
    assert position == 7


def test_the_cursor_moves_with_the_jobs_its_events_queued() -> None:
    async def steps(store: Store) -> tuple[Any, ...]:
        intakes = await store.write(intake.enqueue_all, [arrival("a")], 1.0, ("events", 3))
        return intakes, await store.read(queue.cursor, "events")

    intakes, position = scenario(steps)
    assert [i.status for i in intakes] == ["queued"]
    assert position == 3


def test_a_key_refused_while_paused_is_taken_again_once_unpaused() -> None:
    async def steps(store: Store) -> list[str | None]:
        await store.write(queue.pause, "tick", 1.0)
        refused, _ = await store.write(intake.enqueue_keyed, arrival("k"), 1.0)
        await store.write(queue.unpause, "tick")
        taken, job = await store.write(intake.enqueue_keyed, arrival("k"), 2.0)
        return [refused.status, taken.status, job and job.status]

    assert scenario(steps) == ["paused", "queued", "queued"]


@dataclass(frozen=True)
class Decided:
    action: str
    reason: str | None = None


def slot(key: str, loop_id: str, at: float, admit: Callable[[int, int], Any]) -> intake.Arrival:
    return intake.Arrival(arrival(key, loop_id).job, "t", admit, at)


def test_slots_due_together_are_written_by_as_many_statements_however_many_they_are() -> None:
    def start(running: int, queued: int) -> Start:
        return Start()

    async def statements(store: Store, count: int, at: float) -> int:
        executed = []

        def count_statement(*args: Any) -> None:
            executed.append(args[2])

        sa.event.listen(store.engine, "before_cursor_execute", count_statement)
        slots = [(slot(f"{at}:{i}", f"loop_{i}", at, start), None) for i in range(count)]
        slots.append((slot(f"{at}:missed", "loop_0", at - 1, start), "missed: too old"))
        intakes = await store.write(intake.record_slots, slots, at)
        sa.event.remove(store.engine, "before_cursor_execute", count_statement)
        assert [i.status for i in intakes] == ["queued"] * count + ["missed"]
        return len(executed)

    async def steps(store: Store) -> tuple[int, int]:
        return await statements(store, 3, 60.0), await statements(store, 60, 120.0)

    few, many = scenario(steps)
    assert few == many


@dataclass(frozen=True)
class Admit:
    action: str
    reason: str | None = None


def bounded(key: str, most_queued: int, loop_id: str = "tick") -> intake.Arrival:
    """A firing of a loop that queues at most ``most_queued`` jobs (more are skipped)."""
    fired = arrival(key, loop_id)

    def admit(running: int, queued: int) -> Admit:
        return Admit("queue") if queued < most_queued else Admit("skip", "the queue is full")

    return intake.Arrival(fired.job, fired.trigger_id, admit)


def replacing(key: str) -> intake.Arrival:
    fired = arrival(key)
    return intake.Arrival(fired.job, fired.trigger_id, lambda running, queued: Admit("replace"))


def test_firings_written_together_are_decided_on_the_counts_the_earlier_ones_left() -> None:
    async def steps(store: Store) -> Any:
        firings = [(bounded(key, 2), 1.0) for key in ("a", "b", "c")]
        return await store.write(intake.enqueue_keyed_all, firings)

    done = scenario(steps)
    assert [(taken.status, taken.reason) for taken, _ in done] == [
        ("queued", None),
        ("queued", None),
        ("skipped", "the queue is full"),
    ]


def test_a_key_sent_twice_in_one_write_answers_the_second_with_the_first_job() -> None:
    async def steps(store: Store) -> Any:
        firings = [(arrival("same"), 1.0), (arrival("same"), 1.0)]
        return await store.write(intake.enqueue_keyed_all, firings), await store.read(
            queue.queue_depth
        )

    [(first, first_job), (second, second_job)], depth = scenario(steps)
    assert (first.status, second.status) == ("queued", "duplicate")
    assert first_job == second_job
    assert depth["queued"] == 1


def test_a_replacing_firing_makes_way_among_firings_written_together() -> None:
    async def steps(store: Store) -> Any:
        done = await store.write(intake.enqueue_keyed_all, [(replacing("a"), 1.0)])
        done += await store.write(
            intake.enqueue_keyed_all, [(replacing("b"), 2.0), (bounded("c", 2), 2.0)]
        )
        return done, await store.read(queue.queue_depth)

    done, depth = scenario(steps)
    assert [taken.status for taken, _ in done] == ["queued", "queued", "queued"]
    assert depth["queued"] == 2


def test_firings_written_together_read_their_loops_counts_in_one_statement() -> None:
    async def steps(store: Store) -> int:
        counted: list[str] = []

        def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            if "count(" in statement.lower():
                counted.append(statement)

        sa.event.listen(store.engine, "before_cursor_execute", seen)
        firings = [(bounded(loop + key, 100, loop), 1.0) for key in "abcdef" for loop in "xy"]
        await store.write(intake.enqueue_keyed_all, firings)
        return len(counted)

    assert scenario(steps) == 1


def test_firings_written_together_take_their_savepoint_on_the_drivers_cursor() -> None:
    """SQLAlchemy's savepoint cost the store's thread ~100 µs a write of firings."""

    async def steps(store: Store) -> list[str]:
        through_sqlalchemy: list[str] = []
        sa.event.listen(
            store.engine, "before_cursor_execute", lambda *args: through_sqlalchemy.append(args[2])
        )
        await store.write(intake.enqueue_keyed_all, [(arrival("a"), 1.0), (arrival("b"), 1.0)])
        return through_sqlalchemy

    assert not any("SAVEPOINT" in statement.upper() for statement in scenario(steps))


def test_a_paused_loops_firing_written_with_others_is_recorded_not_run() -> None:
    async def steps(store: Store) -> Any:
        await store.write(queue.pause, "held", 1.0)
        firings = [(arrival("a", "held"), 1.0), (arrival("b", "free"), 1.0)]
        done = await store.write(intake.enqueue_keyed_all, firings)
        return done, await store.read(queue.queue_depth)

    [(held, held_job), (free, _)], depth = scenario(steps)
    assert (held.status, held.reason, free.status) == ("paused", intake.PAUSED, "queued")
    assert held_job is not None
    assert held_job.status == queue.SKIPPED
    assert depth["queued"] == 1


def test_a_key_taken_before_is_answered_with_its_job_among_firings_written_together() -> None:
    async def steps(store: Store) -> Any:
        [(first, _)] = await store.write(intake.enqueue_keyed_all, [(arrival("taken"), 1.0)])
        done = await store.write(
            intake.enqueue_keyed_all, [(arrival("fresh"), 2.0), (arrival("taken"), 2.0)]
        )
        return first, done

    first, [(fresh, _), (again, job)] = scenario(steps)
    assert (fresh.status, again.status) == ("queued", "duplicate")
    assert job is not None
    assert job.id == first.job_id
