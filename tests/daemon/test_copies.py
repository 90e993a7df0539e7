"""Where a firing's data lands: a webhook delivery, a ``loopengine trigger`` and a
``loopengine run`` each carry a unique token; afterwards every table is searched for it and for
the idempotency key, and the statements that looked the key up are counted (SQLite's trace of
every statement the store runs, its parameters inlined)."""

from __future__ import annotations

import io
import json
import os
import textwrap
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa

from loopengine.app import Firing
from loopengine.builtins import builtin_registry
from loopengine.commands._console import Console
from loopengine.commands.run import run_loop
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.store import Store, intake, queue
from tests.daemon.working import work_off

LOOP = """\
id: copied
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: log_only}
"""


class Trace:
    """Every statement run on SQLite connections opened while it is installed."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def connected(self, connection: Any, _record: Any) -> None:
        connection.set_trace_callback(self.statements.append)

    def lookups(self, key: str) -> int:
        """Statements that read by ``key`` (writes carrying it are not lookups)."""
        return sum(
            1 for s in self.statements if key in s and s.lstrip().upper().startswith("SELECT")
        )


@pytest.fixture
def trace() -> Iterator[Trace]:
    traced = Trace()
    sa.event.listen(sa.pool.Pool, "connect", traced.connected)
    try:
        yield traced
    finally:
        sa.event.remove(sa.pool.Pool, "connect", traced.connected)


def _loop(path: Path) -> Loop:
    path.write_text(textwrap.dedent(LOOP))
    report = LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_file(path)
    assert report.loop is not None, report.diagnostics
    return report.loop


def _places(database: Path, text: str) -> Counter[str]:
    """``table.column`` of every value holding ``text``, with how many rows hold it there."""
    found: Counter[str] = Counter()
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as connection:
            for table in sa.inspect(connection).get_table_names():
                for row in connection.execute(sa.text(f'SELECT * FROM "{table}"')).mappings():
                    for column, value in row.items():
                        if text in str(value):
                            found[f"{table}.{column}"] += 1
    finally:
        engine.dispose()
    return found


def _envelope_places(database: Path, job_id: str) -> Counter[str]:
    """Where the envelope of ``job_id`` is kept whole: its row, and any value holding both its
    trace id and its idempotency key."""
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as connection:
            query = sa.text("SELECT trace_id, idempotency_key FROM envelopes WHERE job_id = :id")
            trace_id, key = connection.execute(query, {"id": job_id}).one()
    finally:
        engine.dispose()
    keyed = _places(database, key)
    return Counter({place: n for place, n in _places(database, trace_id).items() if place in keyed})


def _drain(tmp_path: Path, queue_it: Callable[[Store, Loop], Awaitable[str]]) -> str:
    """Queue a job with ``queue_it`` and let a worker run it; the job's id."""
    loop = _loop(tmp_path / "copied.yaml")

    async def main() -> str:
        async with Store.open(f"sqlite:///{tmp_path / 'store.db'}") as store:
            job_id = await queue_it(store, loop)
            await work_off(store, loop, job_id, tmp_path)
            return job_id

    return anyio.run(main)


def _report(
    trip: str, token: Counter[str], envelope: Counter[str], key: Counter[str], lookups: int
) -> None:
    print(f"\n{trip}: payload in {dict(token)}\n  envelope in {dict(envelope)}")
    print(f"  key in {dict(key)}\n  key looked up {lookups} time(s)")


def test_a_webhook_delivery_stores_its_payload_and_envelope_once_and_looks_its_key_up_once(
    tmp_path: Path, trace: Trace
) -> None:
    token, key = f"token-{os.urandom(8).hex()}", f"webhook:{os.urandom(16).hex()}"

    async def deliver(store: Store, loop: Loop) -> str:
        payload = {"token": token}
        trigger = {
            "type": "webhook",
            "id": "hook",
            "path": "p",
            "delivery_id": "d1",
            "data": payload,
        }
        now = time.time()
        arrival = Firing(loop, trigger, key).arrival(now)
        taken, job = await store.write(intake.enqueue_body, "body", arrival, now, now + 300)
        assert taken.status == queue.QUEUED
        assert job is not None
        return job.id

    job_id = _drain(tmp_path, deliver)
    database = tmp_path / "store.db"
    token_at, envelope_at, key_at = (
        _places(database, token),
        _envelope_places(database, job_id),
        _places(database, key),
    )
    lookups = trace.lookups(key)
    _report("webhook", token_at, envelope_at, key_at, lookups)
    assert token_at == {"envelopes.trigger": 1}
    assert not envelope_at
    assert key_at == {"envelopes.idempotency_key": 1}
    assert lookups <= 1


def test_a_triggered_job_stores_its_envelope_once(tmp_path: Path, trace: Trace) -> None:
    token = f"token-{os.urandom(8).hex()}"

    async def fire(store: Store, loop: Loop) -> str:
        firing = Firing(loop, {"type": "manual", "id": "cli"}, f"manual:{token}", {"note": token})
        now = time.time()
        [taken] = await store.write(intake.enqueue_all, [firing.arrival(now)], now)
        assert taken.job_id is not None
        return taken.job_id

    job_id = _drain(tmp_path, fire)
    database = tmp_path / "store.db"
    token_at, envelope_at = _places(database, token), _envelope_places(database, job_id)
    key_at = _places(database, f"manual:{token}")
    lookups = trace.lookups(f"manual:{token}")
    _report("trigger", token_at, envelope_at, key_at, lookups)
    assert not envelope_at
    assert key_at == {"envelopes.idempotency_key": 1}
    assert lookups <= 1


def test_a_run_stores_its_envelope_once_and_reads_nothing_back(
    tmp_path: Path, trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"token-{os.urandom(8).hex()}"
    _loop(tmp_path / "copied.yaml")
    (tmp_path / "loopengine.yaml").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPENGINE_DATABASE", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    out = io.StringIO()
    console = Console(out, io.StringIO())
    path, key = tmp_path / "copied.yaml", f"run:{token}"

    async def main() -> int:
        return await run_loop(
            console, path, [], config=None, dry_run=False, idempotency_key=key, as_json=True
        )

    assert anyio.run(main) == 0
    database = tmp_path / "store.db"
    token_at, key_at = _places(database, token), _places(database, key)
    execution_id = json.loads(out.getvalue())["execution_id"]
    read_back = trace.lookups(execution_id)
    _report("run", token_at, Counter(), key_at, trace.lookups(key))
    print(f"  its execution read back {read_back} time(s)")
    assert key_at == {"envelopes.idempotency_key": 1}
    assert trace.lookups(key) <= 1
    assert read_back == 0
