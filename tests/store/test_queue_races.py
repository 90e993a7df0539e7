"""Inserts that may race with another daemon say who won, on both databases: a slot, a job's
idempotency key, a pause and a cursor (PostgreSQL's driver reports no row count for
``ON CONFLICT DO NOTHING``, so the answer must come from the statement itself)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.errors import LeaseLost
from loopengine.store import (
    ExecutionCommit,
    ExecutionRow,
    JobEnd,
    JobEnvelope,
    LastRun,
    create_engine,
    effects,
    executions,
    jobs,
    migrate,
    queue,
)
from loopengine.store._tables import envelopes
from tests.postgres import PostgresServer, migrated_engine
from tests.waiting import wait_until_blocked


@pytest.fixture(scope="module")
def postgres(shared_postgres: PostgresServer) -> Iterator[sa.Engine]:
    with migrated_engine(shared_postgres) as built:
        yield built


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[sa.Engine]:
    if request.param == "postgresql":
        yield request.getfixturevalue("postgres")
        return
    path: Path = tmp_path_factory.mktemp("store") / "store.db"
    built = create_engine(f"sqlite:///{path}")
    with built.begin() as connection:
        migrate(connection)
    yield built
    built.dispose()


def _twice(engine: sa.Engine, insert: Callable[[sa.Connection], bool]) -> tuple[bool, bool]:
    """What ``insert`` answers the first time and the second, each in its own transaction."""
    answers = []
    for _ in range(2):
        with engine.begin() as connection:
            answers.append(insert(connection))
    return answers[0], answers[1]


def _job(key: str) -> queue.Job:
    job_id = uuid.uuid4().hex
    return queue.Job(
        id=job_id,
        loop_id="tick",
        trigger={"type": "manual"},
        envelope=JobEnvelope(job_id, job_id, "tick", {}, {}, {}, key).as_dict(),
        idempotency_key=key,
        status=queue.QUEUED,
        not_before=0.0,
        created_at=0.0,
    )


def test_a_job_key_is_won_once(engine: sa.Engine) -> None:
    key = uuid.uuid4().hex
    assert _twice(engine, lambda c: queue.insert_job(c, _job(key))) == (True, False)


def test_a_batch_of_jobs_queues_those_whose_keys_are_free_over_several_statements(
    engine: sa.Engine,
) -> None:
    """250 jobs (several statements of envelopes), every fifth under a key taken before."""
    taken = [uuid.uuid4().hex for _ in range(50)]
    with engine.begin() as connection:
        queue.insert_jobs(connection, [_job(key) for key in taken])
    batch = [_job(taken[n // 5] if n % 5 == 0 else uuid.uuid4().hex) for n in range(250)]
    with engine.begin() as connection:
        won = queue.insert_jobs(connection, batch)
    with engine.connect() as connection:
        queued = {found.id for found in map(queue.get_job, [connection] * 250, won) if found}
    assert won == queued == {job.id for n, job in enumerate(batch) if n % 5}


def test_a_slot_is_won_once(engine: sa.Engine) -> None:
    slot = queue.Tick(uuid.uuid4().hex, "cron", 60.0, "queued", None, None, 0.0)
    assert _twice(engine, lambda c: queue.insert_tick(c, slot)) == (True, False)


def test_a_pause_is_won_once(engine: sa.Engine) -> None:
    loop_id = uuid.uuid4().hex
    assert _twice(engine, lambda c: queue.pause(c, loop_id, 1.0)) == (True, False)


def test_a_cursor_moves_forward_only(engine: sa.Engine) -> None:
    name = uuid.uuid4().hex
    for position in (3, 7, 5):
        with engine.begin() as connection:
            queue.move_cursor(connection, name, position, now=1.0)
    with engine.connect() as connection:
        assert queue.cursor(connection, name) == 7


def test_only_the_owner_finishes_a_job(engine: sa.Engine) -> None:
    job = _job(uuid.uuid4().hex)
    with engine.begin() as connection:
        queue.insert_job(connection, job)
        held = queue.claim_job(connection, job, "a", lease_until=10.0)
    finished = []
    for lease in (queue.Lease(held.job_id, "b", 1), queue.Lease(held.job_id, "a", 2), held):
        with engine.begin() as connection:
            finished.append(
                queue.finish_job(connection, lease, outcome="completed", execution_id=None, now=5.0)
            )
    assert finished == [False, False, True]


def _queued(engine: sa.Engine, *jobs: tuple[str, str, float]) -> None:
    """Queue jobs given as (id, loop, created_at)."""
    with engine.begin() as connection:
        for job_id, loop_id, created_at in jobs:
            envelope = JobEnvelope(job_id, job_id, loop_id, {}, {}, {}, job_id).as_dict()
            queue.insert_job(
                connection,
                queue.Job(
                    id=job_id,
                    loop_id=loop_id,
                    trigger={"type": "manual"},
                    envelope=envelope,
                    idempotency_key=job_id,
                    status=queue.QUEUED,
                    not_before=0.0,
                    created_at=created_at,
                ),
            )


def _claimed(connection: sa.Connection, limits: dict[str, int], owner: str) -> str | None:
    found = queue.claim_next(connection, limits, owner, lambda: 100.0, 30.0)
    return found[0].id if found else None


def test_a_claim_locks_no_job_of_a_loop_its_daemon_does_not_serve(postgres: sa.Engine) -> None:
    """Daemons serving different loops: the oldest job, of the other's loop, stays claimable by
    the other while this one's claim is open."""
    run = uuid.uuid4().hex[:8]
    theirs, mine = f"theirs-{run}", f"mine-{run}"
    _queued(postgres, (f"t1-{run}", theirs, 1.0), (f"m1-{run}", mine, 2.0))
    with postgres.connect() as first, postgres.connect() as second, first.begin():
        assert _claimed(first, {mine: 5}, "a") == f"m1-{run}"
        with second.begin():
            assert _claimed(second, {theirs: 5}, "b") == f"t1-{run}"


def _batch(connection: sa.Connection, limits: dict[str, int], owner: str, most: int) -> list[str]:
    claimed = queue.claim_jobs(connection, limits, owner, lambda: 100.0, 30.0, most)
    return [job.id for job, _ in claimed]


def _claiming_behind(
    engine: sa.Engine, limits: dict[str, int], owner: str, most: int
) -> tuple[threading.Thread, list[list[str]]]:
    """A claim of ``most`` jobs run in a thread on its own connection, once it waits on a lock
    (or ended without waiting); what it took is in the list once the thread ends."""
    taken: list[list[str]] = []

    def claim() -> None:
        with engine.begin() as connection:
            taken.append(_batch(connection, limits, owner, most))

    claiming = threading.Thread(target=claim)
    claiming.start()
    wait_until_blocked(engine, claiming)
    return claiming, taken


def test_a_claim_waits_for_the_loop_lock_of_a_claim_under_way_and_takes_the_room_it_left(
    postgres: sa.Engine,
) -> None:
    """A loop allowed three running jobs, five queued: while one daemon's batch of the two
    oldest is open, the other's claim waits (it found no room and took none), then takes the
    one left under the limit; then no batch takes any."""
    run = uuid.uuid4().hex[:8]
    loop = f"batch-{run}"
    _queued(postgres, *((f"j{index}-{run}", loop, float(index)) for index in range(1, 6)))
    with postgres.connect() as first:
        with first.begin():
            assert _batch(first, {loop: 3}, "a", 2) == [f"j1-{run}", f"j2-{run}"]
            claiming, taken = _claiming_behind(postgres, {loop: 3}, "b", 4)
            assert claiming.is_alive()
        claiming.join()
        assert taken == [[f"j3-{run}"]]
        with first.begin():
            assert _batch(first, {loop: 3}, "a", 4) == []


def test_a_claim_that_waited_for_a_loop_now_at_its_limit_takes_none_of_its_jobs(
    postgres: sa.Engine,
) -> None:
    """A loop allowed one running job: a claim that waited for another daemon's claim of it
    to commit counts that job, and takes none."""
    run = uuid.uuid4().hex[:8]
    loop = f"single-{run}"
    _queued(postgres, (f"j1-{run}", loop, 1.0), (f"j2-{run}", loop, 2.0))
    with postgres.connect() as first:
        with first.begin():
            assert _claimed(first, {loop: 1}, "a") == f"j1-{run}"
            claiming, taken = _claiming_behind(postgres, {loop: 1}, "b", 1)
        claiming.join()
    assert taken == [[]]


def test_a_claim_behind_a_loop_at_its_limit_passes_the_jobs_another_claim_holds(
    postgres: sa.Engine,
) -> None:
    """The oldest jobs are of a loop at its limit: while one daemon's claim holds the four
    oldest of another loop, the other daemon's takes the four after them."""
    run = uuid.uuid4().hex[:8]
    full, other = f"full-{run}", f"other-{run}"
    _queued(postgres, *((f"f{index}-{run}", full, float(index)) for index in range(41)))
    _queued(postgres, *((f"o{index}-{run}", other, 100.0 + index) for index in range(8)))
    limits = {full: 1, other: 10}
    with postgres.begin() as connection:
        assert _batch(connection, {full: 1}, "x", 1) == [f"f0-{run}"]
    with postgres.connect() as first:
        with first.begin():
            assert _batch(first, limits, "a", 4) == [f"o{index}-{run}" for index in range(4)]
            claiming, taken = _claiming_behind(postgres, limits, "b", 4)
        claiming.join()
    assert taken == [[f"o{index}-{run}" for index in range(4, 8)]]


def test_a_claim_whose_chosen_jobs_were_taken_while_it_waited_leases_the_next_at_once(
    postgres: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two daemons read the same oldest jobs: the claim that waited for the other's loop lock
    finds the four it chose taken, and its one lease takes the four after them (a second lease
    was a round trip more, the loop's lock held)."""
    run = uuid.uuid4().hex[:8]
    loop = f"both-{run}"
    _queued(postgres, *((f"j{index}-{run}", loop, index - 1000.0) for index in range(8)))
    with postgres.connect() as first:
        with first.begin():
            assert _batch(first, {loop: 64}, "a", 4) == [f"j{index}-{run}" for index in range(4)]
            leases: list[object] = []
            leased = queue._leased
            monkeypatch.setattr(queue, "_leased", lambda *a: leases.append(a) or leased(*a))
            claiming, taken = _claiming_behind(postgres, {loop: 64}, "b", 4)
        claiming.join()
    assert taken == [[f"j{index}-{run}" for index in range(4, 8)]]
    assert len(leases) == 1


def _by_key(engine: sa.Engine, *names: str) -> list[str]:
    """``names`` in the order of their loop locks' keys."""
    with engine.connect() as connection:
        keys = connection.execute(
            sa.text("SELECT hashtext(unnest(CAST(:n AS text[])))"), {"n": list(names)}
        )
        return [name for _, name in sorted(zip(keys.scalars(), names, strict=True))]


def test_a_claim_holding_a_loop_lock_does_not_wait_for_a_lower_one(postgres: sa.Engine) -> None:
    """Loop locks are waited for in one order: a transaction holding the lock of a loop takes
    that of a loop below it only when it is free (it does not wait), so two claims never wait
    for each other."""
    run = uuid.uuid4().hex[:8]
    low, high = _by_key(postgres, f"low-{run}", f"high-{run}")
    _queued(postgres, (f"l1-{run}", low, 1.0), (f"l2-{run}", low, 2.0), (f"h1-{run}", high, 3.0))
    with postgres.connect() as first, postgres.connect() as second, first.begin():
        assert _batch(first, {low: 5}, "a", 1) == [f"l1-{run}"]
        with second.begin():
            assert _batch(second, {high: 5}, "b", 1) == [f"h1-{run}"]
            assert _batch(second, {low: 5}, "b", 1) == []


_RUNNING = sa.text("SELECT count(*) FROM jobs WHERE loop_id = :loop AND status = 'running'")
_QUEUED = sa.text("SELECT count(*) FROM jobs WHERE loop_id = :loop AND status = 'queued'")


def _drain_as(engine: sa.Engine, loop: str, owner: str, seen: list[int]) -> list[str]:
    """Claim batches of three of ``loop``'s jobs (five may run) and end them, until none is
    queued; the jobs this daemon ran. ``seen`` gets the jobs running after each claim."""
    ran: list[str] = []
    while True:
        with engine.begin() as connection:
            claimed = queue.claim_jobs(connection, {loop: 5}, owner, lambda: 100.0, 30.0, 3)
        with engine.connect() as connection:
            seen.append(connection.execute(_RUNNING, {"loop": loop}).scalar_one())
            queued = connection.execute(_QUEUED, {"loop": loop}).scalar_one()
        if not claimed and not queued:
            return ran
        with engine.begin() as connection:
            for _, lease in claimed:
                ended = {"outcome": "completed", "execution_id": None, "now": 100.0}
                queue.finish_job(connection, lease, **ended)
        ran.extend(job.id for job, _ in claimed)


def test_three_daemons_claiming_at_once_keep_a_loops_concurrency_limit(
    postgres: sa.Engine,
) -> None:
    """Three daemons claim batches of one loop's jobs at once, over and over, each waiting for
    the others' loop locks: never more than its five jobs run, and each job runs once."""
    run = uuid.uuid4().hex[:8]
    loop = f"shared-{run}"
    _queued(postgres, *((f"j{index}-{run}", loop, float(index)) for index in range(60)))
    seen: list[int] = []
    with ThreadPoolExecutor(3) as pool:
        ran = [pool.submit(_drain_as, postgres, loop, owner, seen) for owner in "abc"]
        runs = [job_id for done in ran for job_id in done.result()]
    assert sorted(runs) == sorted(f"j{index}-{run}" for index in range(60))
    assert max(seen) <= 5


_LOOP_LOCKS_HELD = sa.text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 27247"
    " AND pid = pg_backend_pid()"
)
"""The loop locks (key space 0x6A6F) the connection's transaction holds."""


def test_a_claim_of_one_job_locks_its_loop_alone(postgres: sa.Engine) -> None:
    """The oldest jobs are of ten loops: a claim of one locks (and counts the running jobs of)
    the first loop only."""
    run = uuid.uuid4().hex[:8]
    _queued(
        postgres, *((f"j{index}-{run}", f"l{index}-{run}", float(index)) for index in range(10))
    )
    limits = {f"l{index}-{run}": 5 for index in range(10)}
    with postgres.connect() as connection, connection.begin():
        assert _batch(connection, limits, "a", 1) == [f"j0-{run}"]
        assert connection.execute(_LOOP_LOCKS_HELD).scalar_one() == 1


def _leased(engine: sa.Engine) -> tuple[queue.Lease, str]:
    """A job of a loop of its own, claimed by daemon ``a`` until 10.0; its lease and loop."""
    loop = f"leased-{uuid.uuid4().hex[:8]}"
    _queued(engine, (f"j-{loop}", loop, 0.0))
    with engine.begin() as connection:
        found = queue.claim_next(connection, {loop: 1}, "a", lambda: 0.0, 10.0)
    assert found is not None
    return found[1], loop


_TAKEN_BY = sa.select(envelopes.c.execution_id).where(envelopes.c.job_id == sa.bindparam("job_id"))


def _take(connection: sa.Connection, lease: queue.Lease, execution_id: str) -> str | None:
    """None when ``execution_id`` took the envelope, else the execution that had."""
    if fastpath.execute(connection, *jobs.taking_leased_envelope(lease, execution_id)):
        return None
    queue.check_lease(connection, lease)
    return connection.execute(_TAKEN_BY, {"job_id": lease.job_id}).scalar()


def test_a_leased_envelope_is_taken_once_and_names_who_took_it(engine: sa.Engine) -> None:
    lease, _ = _leased(engine)
    taken = []
    for execution_id in ("x1", "x2"):
        with engine.begin() as connection:
            taken.append(_take(connection, lease, execution_id))
    assert taken == [None, "x1"]


def test_a_leased_envelope_is_not_taken_under_a_lease_taken_over(engine: sa.Engine) -> None:
    lease, _ = _leased(engine)
    with engine.begin() as connection:
        stale = queue.Lease(lease.job_id, lease.owner, lease.generation + 1)
        with pytest.raises(LeaseLost):
            _take(connection, stale, "x1")
    with engine.begin() as connection:
        assert _take(connection, lease, "x2") is None


def _row(execution_id: str, job_id: str, loop: str) -> ExecutionRow:
    """A running execution of ``loop``'s job, every kind of column set, some to null."""
    return ExecutionRow(
        id=execution_id,
        loop_id=loop,
        loop_version="v1",
        loop_file=f"{loop}.yaml",
        status="running",
        job_id=job_id,
        trigger_type="manual",
        durability="phase",
        dry_run=True,
        started_at=1795776133.907957,
        owner="a",
        context={"data": {"é": [1, 2.5, None]}},
    )


def _first_commit(
    engine: sa.Engine, lease: queue.Lease, execution_id: str, loop: str, *, ends: bool = False
) -> None:
    """The first commit of ``execution_id``, run for the job ``lease`` holds (its last too, the
    job's end with it, when it ``ends``)."""
    envelope = JobEnvelope(lease.job_id, lease.job_id, loop, {}, {}, {}, lease.job_id)
    row = _row(execution_id, lease.job_id, loop)
    commit = ExecutionCommit(execution_id, lease, (envelope, row))
    commit.ends = JobEnd("completed", None, 20.0) if ends else None
    with engine.begin() as connection:
        effects.write_commit(connection, commit)


def test_a_leased_job_s_first_commit_takes_its_key_and_inserts_its_execution_as_given(
    engine: sa.Engine,
) -> None:
    lease, loop = _leased(engine)
    first = f"x-{loop}"
    _first_commit(engine, lease, first, loop)
    with engine.connect() as connection:
        stored = executions.get_execution(connection, first)
        job = queue.get_job(connection, lease.job_id)
    assert stored == _row(first, lease.job_id, loop)
    assert job is not None
    assert (job.status, job.started) == (queue.RUNNING, first)


def test_a_leased_job_s_first_commit_that_ends_it_inserts_its_execution_and_ends_the_job(
    engine: sa.Engine,
) -> None:
    lease, loop = _leased(engine)
    first = f"x-{loop}"
    _first_commit(engine, lease, first, loop, ends=True)
    with engine.connect() as connection:
        stored = executions.get_execution(connection, first)
        job = queue.get_job(connection, lease.job_id)
    assert stored == _row(first, lease.job_id, loop)
    assert job is not None
    assert (job.status, job.execution_id) == (queue.DONE, first)


@pytest.mark.parametrize("ends", [False, True])
def test_a_second_execution_of_a_leased_job_is_refused_and_not_inserted(
    engine: sa.Engine, ends: bool
) -> None:
    lease, loop = _leased(engine)
    first, second = f"x-{loop}", f"y-{loop}"
    _first_commit(engine, lease, first, loop)
    with pytest.raises(LeaseLost):
        _first_commit(engine, lease, second, loop, ends=ends)
    with engine.connect() as connection:
        assert executions.get_execution(connection, second) is None
        job = queue.get_job(connection, lease.job_id)
    assert job is not None
    assert (job.status, job.started) == (queue.RUNNING, first)


@pytest.mark.parametrize("ends", [False, True])
def test_an_execution_under_a_lease_taken_over_is_refused_and_not_inserted(
    engine: sa.Engine, ends: bool
) -> None:
    lease, loop = _leased(engine)
    stale = queue.Lease(lease.job_id, lease.owner, lease.generation + 1)
    with pytest.raises(LeaseLost):
        _first_commit(engine, stale, f"x-{loop}", loop, ends=ends)
    with engine.connect() as connection:
        assert executions.get_execution(connection, f"x-{loop}") is None
        job = queue.get_job(connection, lease.job_id)
    assert job is not None
    assert (job.status, job.started) == (queue.RUNNING, None)


def test_no_takeover_passes_the_transaction_that_took_the_envelope(postgres: sa.Engine) -> None:
    """Taking the envelope locks the job's row as the lease check does: a daemon taking the job
    over (its lease expired) passes it while that transaction is open, then finds the
    envelope taken."""
    lease, loop = _leased(postgres)
    with postgres.connect() as first, postgres.connect() as second:
        with first.begin():
            assert _take(first, lease, "x1") is None
            with second.begin():
                assert _taken_over(second, loop) is None
        with second.begin():
            assert _taken_over(second, loop) == (lease.job_id, "x1")


def _taken_over(connection: sa.Connection, loop: str) -> tuple[str, str | None] | None:
    """The job of ``loop`` daemon ``b`` claims once its lease expired, and its envelope's
    execution."""
    found = queue.claim_next(connection, {loop: 1}, "b", lambda: 100.0, 30.0)
    return None if found is None else (found[0].id, found[0].started)


def test_a_claim_to_start_reads_what_each_fresh_job_starts_from(engine: sa.Engine) -> None:
    loop = f"start-{uuid.uuid4().hex[:8]}"
    other = f"{loop}-b"
    _queued(
        engine, (f"j1-{loop}", loop, 0.0), (f"j2-{loop}", loop, 1.0), (f"j3-{loop}", other, 2.0)
    )
    row = _row(f"x-{loop}", "gone", loop)
    ended = replace(row, status="finished", outcome="completed", completed_at=5.0, dry_run=False)
    with engine.begin() as connection:
        executions.insert_execution(connection, ended)
        limits = {loop: 5, other: 5}
        claimed = queue.claim_to_start(connection, limits, "a", lambda: 10.0, 30.0, 3)
    last = LastRun("completed", 5.0, row.started_at)
    starts = {job.id: start for job, _, start in claimed}
    assert starts == {
        f"j1-{loop}": (last, None),
        f"j2-{loop}": (last, None),
        f"j3-{loop}": (None, None),
    }


def test_a_claim_to_start_reads_nothing_for_a_job_an_execution_took(engine: sa.Engine) -> None:
    """That execution resumes from its own last commit."""
    lease, loop = _leased(engine)
    _first_commit(engine, lease, f"x-{loop}", loop)
    with engine.begin() as connection:
        claimed = queue.claim_to_start(connection, {loop: 1}, "b", lambda: 100.0, 30.0, 1)
    assert [(job.started, start) for job, _, start in claimed] == [(f"x-{loop}", None)]
