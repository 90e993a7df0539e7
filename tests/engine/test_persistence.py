"""Durability modes, idempotent starts, redaction, and approvals that survive a restart."""

from __future__ import annotations

import base64
import json
import logging
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa

from loopengine import SkillContext, skill
from loopengine.builtins import builtin_registry
from loopengine.contract import Durability, Loop, LoopLoader, Outcome
from loopengine.contract.checks import Env
from loopengine.engine import (
    Engine,
    Services,
    _persistence,
    answer_approval,
    escalate_overdue,
    resume,
)
from loopengine.engine._persistence import Recorder
from loopengine.engine.phases import _learn
from loopengine.errors import LeaseLost, NotResumable, StorageError
from loopengine.skills import Registry
from loopengine.store import (
    Store,
    approvals,
    executions,
    learning,
    new_envelope,
    queue,
    signals,
)
from loopengine.testing import memory_store
from tests.engine import skills_for_tests
from tests.engine.conftest import Harness, interrupt_after_decide, open_harness

pytestmark = pytest.mark.anyio

SEVEN = """\
id: seven
trigger: {type: manual}
durability: DURABILITY
detect:
  sources: [{skill: report, name: s, params: {values: {n: 1}}}]
analyze:
  analysis_steps: [{name: a, skill_id: report}]
decide: {fallback_action: go}
act:
  actions: [{action_id: go, skill_id: fix}]
validate:
  assertions: [{expression: 'n == `1`'}]
learn:
  feedback_sources: [{type: outcome, name: ok}]
store:
  audit_trail: {enabled: true}
"""


@pytest.mark.parametrize("durability", ["phase", "execution"])
async def test_every_phase_is_recorded_in_order(harness: Harness, durability: str) -> None:
    commits: list[str] = []
    harness.engine.on_commit = lambda _id, what: commits.append(what)
    done = await harness.engine.run(harness.loop(SEVEN.replace("DURABILITY", durability)))
    view = await harness.view(done)
    phases = ["detect", "analyze", "decide", "act", "validate", "learn", "store"]
    assert [p["phase"] for p in view["phases"]] == phases
    expected = ["started", *phases[:-1], "finished"] if durability == "phase" else ["finished"]
    assert commits == expected


@pytest.mark.parametrize("durability", ["phase", "execution"])
async def test_what_a_skill_hands_the_store_is_written_once_with_its_phase(
    harness: Harness, durability: str
) -> None:
    text = SEVEN.replace("DURABILITY", durability).replace("skill_id: fix", "skill_id: note_event")
    done = await harness.engine.run(harness.loop(text))
    written = await harness.store.read(signals.list_events, "noted".__eq__, 10)
    assert [(e.data, e.execution_id) for e in written] == [({"step": "go"}, done.execution_id)]


async def test_a_repeated_idempotency_key_returns_the_first_execution(harness: Harness) -> None:
    loop = harness.loop(SEVEN.replace("DURABILITY", "phase"))
    first = await harness.engine.run(loop, envelope=new_envelope(loop.id, idempotency_key="k-1"))
    calls = len(skills_for_tests.CALLS)
    second = await harness.engine.run(loop, envelope=new_envelope(loop.id, idempotency_key="k-1"))
    assert second.execution_id == first.execution_id
    assert len(skills_for_tests.CALLS) == calls


async def test_the_envelope_is_stored_with_a_bounded_scope(harness: Harness) -> None:
    loop = harness.loop(SEVEN.replace("DURABILITY", "phase"))
    view = await harness.view(await harness.engine.run(loop, inputs={"x": 1}))
    job = view["job"]
    assert (job["intent"], job["scope"], job["payload"]) == ("seven", {"limit": 1000}, {"x": 1})
    assert len(job["trace_id"]) == 32


CANARY = "canary-7f3b9c2e-d41a-4b8e"


def _canary_forms() -> list[bytes]:
    """The canary and the forms a skill may turn it into (halves longer than 8 characters)."""
    half = len(CANARY) // 2
    forms = [CANARY, CANARY.upper(), base64.b64encode(CANARY.encode()).decode()]
    return [form.encode() for form in [*forms, CANARY[:half], CANARY[half:]]]


async def test_no_form_of_a_secret_reaches_the_store_or_the_logs(
    tmp_path: Path, engine_registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_harness(tmp_path, engine_registry, environ={"API_TOKEN": CANARY}) as opened:
        loop = opened.loop(
            "id: secret\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
            "    - {name: a, skill_id: secretive, params: {token: '${ secret.API_TOKEN }'}}\n"
        )
        with caplog.at_level(logging.WARNING, logger="loopengine.skills"):
            done = await opened.engine.run(loop)
        assert done.outcome is Outcome.COMPLETED
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("loopengine.db*"))
    logged = caplog.text.encode()
    assert "calling the API with ***" in caplog.text
    for form in _canary_forms():
        assert form not in stored, form
        assert form not in logged, form


def _gated() -> str:
    return (
        "id: gated\ntrigger: {type: manual}\ndecide:\n  fallback_action: fix_all\n"
        "  human_approval: {required_for: [fix_all], timeout_hours: 24}\n"
        "act:\n  actions: [{action_id: fix_all, skill_id: fix}]\n"
    )


async def test_an_approval_survives_a_restart(tmp_path: Path, engine_registry: Registry) -> None:
    async with open_harness(tmp_path, engine_registry) as first:
        done = await first.engine.run(first.loop(_gated()))
    assert done.outcome is Outcome.AWAITING_APPROVAL
    assert [c["skill"] for c in skills_for_tests.CALLS] == []

    async with open_harness(tmp_path, engine_registry) as second:
        approved = await answer_approval(
            second.engine, second.load_loop, done.execution_id, True, "ok"
        )
        assert approved.outcome is Outcome.COMPLETED
        assert [c["skill"] for c in skills_for_tests.CALLS] == ["fix"]
        gate = await second.store.read(approvals.get_approval, done.execution_id)
        assert gate is not None
        assert (gate.status, gate.note) == ("approved", "ok")


async def test_an_answered_gate_cannot_be_answered_again(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(_gated()))
    await answer_approval(harness.engine, harness.load_loop, done.execution_id, False, None)
    with pytest.raises(NotResumable, match="already rejected"):
        await answer_approval(harness.engine, harness.load_loop, done.execution_id, True, None)


async def _interrupted_after_decide(harness: Harness) -> str:
    """An execution of the seven-phase loop as a crash right after decide leaves it."""
    done = await harness.engine.run(harness.loop(SEVEN.replace("DURABILITY", "phase")))
    execution_id = done.execution_id

    await harness.store.write(interrupt_after_decide, execution_id)
    skills_for_tests.CALLS.clear()
    return execution_id


async def test_resume_continues_after_the_last_committed_phase(harness: Harness) -> None:
    execution_id = await _interrupted_after_decide(harness)
    resumed = await resume(harness.engine, harness.load_loop, execution_id)
    assert resumed.outcome is Outcome.COMPLETED
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["fix"]
    view = await harness.view(resumed)
    assert [p["phase"] for p in view["phases"]][-4:] == ["act", "validate", "learn", "store"]


async def test_resume_refuses_a_loop_changed_since_and_says_what_changed(
    harness: Harness,
) -> None:
    execution_id = await _interrupted_after_decide(harness)
    seven = SEVEN.replace("DURABILITY", "phase")
    harness.loop(seven.replace("act:\n  actions:", "act:\n  max_retries: 1\n  actions:"))
    with pytest.raises(NotResumable, match=r"changed since execution \w+ started \(act differ\)"):
        await resume(harness.engine, harness.load_loop, execution_id)
    assert skills_for_tests.CALLS == []
    row = await harness.store.read(lambda c: executions.get_execution(c, execution_id))
    assert row is not None
    assert row.status == "interrupted"


async def test_resume_accepts_a_loop_whose_comments_alone_changed(harness: Harness) -> None:
    execution_id = await _interrupted_after_decide(harness)
    harness.loop("# reviewed\n" + SEVEN.replace("DURABILITY", "phase"))
    resumed = await resume(harness.engine, harness.load_loop, execution_id)
    assert resumed.outcome is Outcome.COMPLETED


async def test_two_resumes_at_once_run_the_rest_once(harness: Harness) -> None:
    execution_id = await _interrupted_after_decide(harness)
    ended: list[object] = []

    async def attempt() -> None:
        try:
            ended.append((await resume(harness.engine, harness.load_loop, execution_id)).outcome)
        except NotResumable as exc:
            ended.append(str(exc))

    async with anyio.create_task_group() as group:
        group.start_soon(attempt)
        group.start_soon(attempt)
    assert ended.count(Outcome.COMPLETED) == 1
    assert [c["skill"] for c in skills_for_tests.CALLS] == ["fix"]


async def test_resume_refuses_an_execution_that_is_not_interrupted(harness: Harness) -> None:
    done = await harness.engine.run(harness.loop(SEVEN.replace("DURABILITY", "phase")))
    with pytest.raises(NotResumable, match="is completed, not interrupted"):
        await resume(harness.engine, harness.load_loop, done.execution_id)


async def test_an_engine_on_the_memory_store_runs_and_records(harness: Harness) -> None:
    async with memory_store() as store:
        engine = Engine(Services(harness.registry, store, base=harness.tmp))
        loop = harness.loop(SEVEN.replace("DURABILITY", "phase"))
        done = await engine.run(loop)
        rows = await store.read(lambda c: executions.list_executions(c, loop_id=loop.id))
    assert done.outcome is Outcome.COMPLETED
    assert [row.outcome for row in rows] == ["completed"]


async def test_static_params_are_validated_once_and_kept_on_their_template(
    harness: Harness,
) -> None:
    loop = harness.loop(SEVEN.replace("DURABILITY", "phase"))
    await harness.engine.run(loop)
    assert loop.spec.act is not None
    template = loop.spec.act.actions[0].params
    assert template.prepared == {"fix": {"dry_run": False, "after": 0, "item": None, "batch": None}}


async def test_the_next_execution_sees_what_another_process_wrote_meanwhile(
    tmp_path: Path, engine_registry: Registry
) -> None:
    """An inline store remembers what an execution starts from; a commit by another process
    must not be hidden by it."""
    loop_text = (
        "id: learner\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
        "    - {name: a, skill_id: report, params: {values: {seen: '${ state }'}}}\n"
        "learn:\n  feedback_sources: [{type: outcome, name: ok}]\n"
    )
    path = tmp_path / "loop.yaml"
    path.write_text(loop_text)
    loop = LoopLoader(Env(engine_registry)).load_file(path).loop
    assert loop is not None
    async with Store.open(f"sqlite:///{tmp_path / 'n.db'}?synchronous=normal") as store:
        engine = Engine(Services(engine_registry, store, base=tmp_path))
        await engine.run(loop)
        second = await engine.run(loop)
        assert store.recall(("start", "learner")) is not None
        with sqlite3.connect(tmp_path / "n.db") as other:
            other.execute("""UPDATE loop_state SET "values" = '{"score": 0.25, "x": 7}'""")
        third = await engine.run(loop)
        row = await store.read(lambda c: executions.get_execution(c, third.execution_id))
    assert second.outcome is third.outcome is Outcome.COMPLETED
    assert row is not None
    assert row.context["data"]["seen"]["x"] == 7


@pytest.mark.parametrize("synchronous", ["normal", "full"])
async def test_a_committed_phase_holds_the_context_it_left_not_a_later_one(
    tmp_path: Path, synchronous: str
) -> None:
    """What a crash at that moment leaves is what resume starts from: the next phase's partial
    work (and its act attempt, which makes idempotency keys) must not be in it."""
    started, release = anyio.Event(), anyio.Event()

    @skill("hold")
    async def hold(ctx: SkillContext) -> dict[str, Any]:
        started.set()
        await release.wait()
        return {}

    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    registry.add_object(hold)
    (tmp_path / "ahead.yaml").write_text(
        "id: ahead\ntrigger: {type: manual}\n"
        "detect:\n  sources: [{skill: report, name: s, params: {values: {n: 1}}}]\n"
        "analyze:\n  analysis_steps:\n"
        "    - {name: first, skill_id: report, params: {values: {analyzed: yes}}}\n"
        "    - {name: second, skill_id: hold}\n"
    )
    loop = LoopLoader(Env(registry)).load_file(tmp_path / "ahead.yaml").loop
    assert loop is not None
    database = tmp_path / "ahead.db"
    url = f"sqlite:///{database}?synchronous={synchronous}"
    async with Store.open(url) as store, anyio.create_task_group() as group:
        group.start_soon(Engine(Services(registry, store, base=tmp_path)).run, loop)
        await started.wait()
        await store.read(lambda c: None)
        with sqlite3.connect(database) as other:
            last_phase, context = other.execute(
                "SELECT last_phase, context FROM executions"
            ).fetchone()
        release.set()
    assert last_phase == "detect"
    assert "analyzed" not in json.loads(context)["data"]


async def test_an_escalation_does_not_hand_the_next_execution_old_learned_state(
    tmp_path: Path, engine_registry: Registry
) -> None:
    (tmp_path / "counter.yaml").write_text(
        "id: counter\ntrigger: {type: manual}\nparams:\n  n: {type: integer, default: 3}\n"
        "analyze:\n  analysis_steps: [{name: c, skill_id: report, "
        'params: {values: {counted: "${ input.n }"}}}]\n'
        'decide:\n  decision_tree: [{condition: "counted > `5`", action: big}]\n'
        "  fallback_action: log_only\n  human_approval: {required_for: [big]}\n"
        "act:\n  actions: [{action_id: big, skill_id: fix, on: [big]}]\n"
        "learn:\n  feedback_sources: [{type: outcome, name: ok}]\n"
        "  learning_config: {min_samples: 1, cooldown_hours: 0}\n"
        '  adjust: [{name: x, target: "`10`", initial: 0}]\n'
    )
    loader = LoopLoader(Env(engine_registry))
    loop = loader.load_file(tmp_path / "counter.yaml").loop
    assert loop is not None
    async with Store.open(f"sqlite:///{tmp_path / 'c.db'}?synchronous=normal") as store:
        engine = Engine(Services(engine_registry, store, base=tmp_path))
        await engine.run(loop, inputs={"n": 9})
        for _ in range(3):
            await engine.run(loop)
        await store.write(lambda c: c.exec_driver_sql("UPDATE approvals SET deadline = 0"))
        await escalate_overdue(engine, lambda path: loader.load_file(Path(path)).loop)
        await engine.run(loop)
        state = await store.read(learning.get_state, "counter")
    assert state is not None
    assert state.values["x"] == pytest.approx(3.439)


QUIET = """\
id: quiet
trigger: {type: manual}
decide: {fallback_action: none}
"""


def _commits_of(database: Path, execution_id: str) -> list[int]:
    """The last phase each of the execution's commits recorded (its phases rows' ``seq``)."""
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT seq FROM phases WHERE execution_id = ? ORDER BY seq", (execution_id,)
        )
        return [seq for (seq,) in rows]


async def test_phases_that_call_no_skill_are_committed_with_the_end(harness: Harness) -> None:
    commits: list[str] = []
    harness.engine.on_commit = lambda _id, what: commits.append(what)
    done = await harness.engine.run(harness.loop(QUIET))
    assert done.outcome is Outcome.NO_ACTION
    assert _commits_of(harness.tmp / "loopengine.db", done.execution_id) == [7]
    assert commits == ["started", "decide", "finished"]


class _Held:
    """A loop whose analyze calls a skill and whose act waits in its skill until released."""

    TEXT = (
        "id: ahead\ntrigger: {type: manual}\n"
        "analyze:\n  analysis_steps: [{name: a, skill_id: report, params: {values: {n: 1}}}]\n"
        "decide: {fallback_action: go}\n"
        "act:\n  actions: [{action_id: go, skill_id: hold}]\n"
    )

    def __init__(self) -> None:
        self.started, self.release = anyio.Event(), anyio.Event()
        self.registry = builtin_registry()
        self.registry.add_module(skills_for_tests)

        @skill("hold")
        async def hold(ctx: SkillContext) -> dict[str, Any]:
            skills_for_tests.CALLS.append({"skill": "hold", "phase": ctx.phase})
            self.started.set()
            await self.release.wait()
            return {}

        self.registry.add_object(hold)

    def loop(self, folder: Path) -> Loop:
        (folder / "ahead.yaml").write_text(self.TEXT)
        loop = LoopLoader(Env(self.registry)).load_file(folder / "ahead.yaml").loop
        assert loop is not None
        return loop


async def _while_held(
    held: _Held, tmp_path: Path, lasted_s: float = 0.0
) -> tuple[list[int], list[tuple[Any, ...]]]:
    """The phases committed (``_commits_of``) and the executions' (id, status, last phase), as
    the execution's held skill has run ``lasted_s`` (what the store was handed before is in)."""
    database = tmp_path / "ahead.db"
    async with Store.open(f"sqlite:///{database}") as store, anyio.create_task_group() as group:
        group.start_soon(
            Engine(Services(held.registry, store, base=tmp_path)).run, held.loop(tmp_path)
        )
        await held.started.wait()
        await anyio.sleep(lasted_s)
        await store.read(lambda c: None)
        with sqlite3.connect(database) as other:
            shown = other.execute("SELECT id, status, last_phase FROM executions").fetchall()
        committed = _commits_of(database, shown[0][0])
        held.release.set()
    return committed, shown


async def test_phases_held_are_committed_once_a_skill_call_lasts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Analyze called a skill, decide called none: both are in once act's skill has run for
    ``SHOWN_AFTER_S`` (a live view shows them)."""
    monkeypatch.setattr(_persistence, "SHOWN_AFTER_S", 0.0)
    committed, [(_, _, last_phase)] = await _while_held(_Held(), tmp_path, lasted_s=0.01)
    assert (last_phase, committed) == ("decide", [2, 3])


async def test_phases_held_wait_for_the_commit_after_a_quick_skill_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decide called no skill: while act's skill has run for less than ``SHOWN_AFTER_S``, only
    analyze, which called one, is in."""
    monkeypatch.setattr(_persistence, "SHOWN_AFTER_S", 3600.0)
    committed, [(_, _, last_phase)] = await _while_held(_Held(), tmp_path)
    assert (last_phase, committed) == ("analyze", [2])


class _HeldInDetect(_Held):
    TEXT = "id: ahead\ntrigger: {type: manual}\ndetect:\n  sources: [{skill: hold, name: s}]\n"


async def test_a_run_with_no_row_yet_shows_it_running_while_its_first_phase_runs(
    tmp_path: Path,
) -> None:
    """The start of an execution no idempotency key inserted is committed at once, not held
    with the first phase: history shows it while a slow detect runs."""
    _, shown = await _while_held(_HeldInDetect(), tmp_path)
    assert [(status, last_phase) for _, status, last_phase in shown] == [("running", None)]


async def test_a_resumed_execution_calls_no_skill_of_a_committed_phase_again(
    tmp_path: Path,
) -> None:
    """What a crash during act leaves (a copy of the database then) resumes from decide, which
    called no skill and was held: analyze's call is not made again."""
    held = _Held()
    loop = held.loop(tmp_path)
    database, crashed = tmp_path / "ahead.db", tmp_path / "crashed.db"
    async with Store.open(f"sqlite:///{database}") as store, anyio.create_task_group() as group:
        group.start_soon(Engine(Services(held.registry, store, base=tmp_path)).run, loop)
        await held.started.wait()
        await store.read(lambda c: None)
        with sqlite3.connect(database) as source, sqlite3.connect(crashed) as copy:
            source.backup(copy)
            copy.execute("UPDATE executions SET status = 'interrupted'")
        held.release.set()
    skills_for_tests.CALLS.clear()
    async with Store.open(f"sqlite:///{crashed}") as store:
        engine = Engine(Services(held.registry, store, base=tmp_path))
        (execution_id,) = await store.read(lambda c: [r.id for r in executions.list_executions(c)])
        done = await resume(engine, lambda _path: loop, execution_id)
        record = await store.read(executions.read_record, execution_id)
    assert done.outcome is Outcome.COMPLETED
    assert [(c["skill"], c["phase"]) for c in skills_for_tests.CALLS] == [("hold", "act")]
    assert record is not None
    assert [p.phase for p in record.phases][:4] == ["detect", "analyze", "decide", "act"]


_WRITTEN = re.compile(
    r"^(?:INSERT INTO (executions|phases) \(.*?VALUES \('|UPDATE (executions) .*executions\.id = ')"
    r"(\w+)'",
    re.DOTALL,
)


def _rows_written_per_transaction(statements: list[str]) -> list[list[tuple[str, str]]]:
    """Each transaction's writes (inserts and updates) of execution and phases rows, as
    (table, execution id)."""
    transactions: list[list[tuple[str, str]]] = [[]]
    for statement in statements:
        if statement == "COMMIT":
            transactions.append([])
        elif (found := _WRITTEN.match(statement)) is not None:
            transactions[-1].append((found[1] or found[2], found[3]))
    return [written for written in transactions if written]


async def test_executions_committing_at_once_write_each_row_once_a_transaction(
    tmp_path: Path, engine_registry: Registry
) -> None:
    """Phases of several executions that end while the store is busy join each execution's
    commit still queued, even behind another's: its row and its phases row are written once."""
    statements: list[str] = []

    def traced(connection: Any, _record: Any) -> None:
        connection.set_trace_callback(statements.append)

    sa.event.listen(sa.pool.Pool, "connect", traced)
    try:
        async with open_harness(tmp_path, engine_registry) as harness:
            loop = harness.loop(SEVEN.replace("DURABILITY", "phase"))
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(harness.engine.run, loop)
    finally:
        sa.event.remove(sa.pool.Pool, "connect", traced)
    transactions = _rows_written_per_transaction(statements)
    assert transactions
    assert all(len(set(written)) == len(written) for written in transactions)


def _fence(harness: Harness, known: bool) -> Recorder:
    """A recorder under the lease of a job no longer anyone's (the store's check fails), which
    its daemon knows to hold (``known``) or not."""
    lease = queue.Lease("taken-over", "a", 1)
    return Recorder(harness.store, Durability.PHASE, lease=lease, lease_held=lambda _: known)


async def test_a_fence_passes_at_once_while_the_lease_is_known_to_hold(harness: Harness) -> None:
    await _fence(harness, known=True).fence()


async def test_a_fence_asks_the_store_once_the_lease_is_not_known_to_hold(
    harness: Harness,
) -> None:
    with pytest.raises(LeaseLost):
        await _fence(harness, known=False).fence()


async def test_phases_that_cannot_be_handed_over_as_a_call_lasts_fail_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-over runs outside the execution (a timer): its failure is the execution's, at
    its next commit, not a line in asyncio's log while the phases are lost."""
    monkeypatch.setattr(_persistence, "SHOWN_AFTER_S", 0.0)
    held = _Held()

    encoded = executions.PhaseRows.of

    def unencodable_once(seq: int, done: list[Any]) -> Any:
        monkeypatch.setattr(executions.PhaseRows, "of", encoded)
        raise TypeError("not JSON")

    async with Store.open(f"sqlite:///{tmp_path / 'ahead.db'}") as store:
        engine = Engine(Services(held.registry, store, base=tmp_path))
        async with anyio.create_task_group() as group:

            async def release_once_handed() -> None:
                await held.started.wait()
                monkeypatch.setattr(executions.PhaseRows, "of", unencodable_once)
                await anyio.sleep(0.01)
                held.release.set()

            group.start_soon(release_once_handed)
            with pytest.raises(StorageError, match="cannot record"):
                await engine.run(held.loop(tmp_path))


_ACTS_THEN_LEARNS = (
    "id: redo\ntrigger: {type: manual}\n"
    "decide: {fallback_action: go}\n"
    "act:\n  actions: [{action_id: go, skill_id: fix}]\n"
    "learn:\n  feedback_sources: [{type: metric, name: m}]\n"
)


async def test_act_s_skill_is_not_called_again_after_a_crash_while_learn_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Act called a skill and ended: it is in the store before learn's read of a metric
    returns, so what a crash there leaves resumes after act."""
    registry = builtin_registry()
    registry.add_module(skills_for_tests)
    (tmp_path / "redo.yaml").write_text(_ACTS_THEN_LEARNS)
    loop = LoopLoader(Env(registry)).load_file(tmp_path / "redo.yaml").loop
    assert loop is not None
    reached, release = anyio.Event(), anyio.Event()
    original = _learn._signal_value

    async def held(*args: Any) -> Any:
        reached.set()
        await release.wait()
        return await original(*args)

    monkeypatch.setattr(_learn, "_signal_value", held)
    database, crashed = tmp_path / "redo.db", tmp_path / "crashed.db"
    async with Store.open(f"sqlite:///{database}") as store, anyio.create_task_group() as group:
        group.start_soon(Engine(Services(registry, store, base=tmp_path)).run, loop)
        await reached.wait()
        await store.read(lambda c: None)
        with sqlite3.connect(database) as source, sqlite3.connect(crashed) as copy:
            source.backup(copy)
            copy.execute("UPDATE executions SET status = 'interrupted'")
        release.set()
    monkeypatch.setattr(_learn, "_signal_value", original)
    skills_for_tests.CALLS.clear()
    async with Store.open(f"sqlite:///{crashed}") as store:
        engine = Engine(Services(registry, store, base=tmp_path))
        (execution_id,) = await store.read(lambda c: [r.id for r in executions.list_executions(c)])
        done = await resume(engine, lambda _path: loop, execution_id)
    assert done.outcome is Outcome.COMPLETED
    assert [call["skill"] for call in skills_for_tests.CALLS] == []
