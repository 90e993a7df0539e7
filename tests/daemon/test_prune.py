"""Retention: the daemon's prune removes artifacts past their retention from every storage, then
from the index; one a storage cannot remove now stays indexed and is removed at a later prune."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import loopengine.daemon._daemon as daemon_module
from loopengine.app import Runtime, open_runtime
from loopengine.daemon import DaemonLog
from loopengine.daemon._daemon import Daemon
from loopengine.store import Artifact, records
from tests.redis import RedisServer, redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
async def runtime(
    tmp_path: Path, redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Runtime]:
    (tmp_path / "loops").mkdir()
    config = tmp_path / "loopengine.yaml"
    config.write_text(f"storage: {{redis: '{redis.url}'}}\n")
    monkeypatch.chdir(tmp_path)
    async with open_runtime(config) as opened:
        yield opened


async def _stored(runtime: Runtime, storage: str, name: str, expires_at: float) -> Artifact:
    """An artifact written to ``storage`` and indexed as expiring at ``expires_at``."""
    record = {"loop_id": "tick", "execution_id": "e1", "name": name, "type": "metric"}
    location = runtime.engine.services.artifacts.write(storage, {**record, "content": {}})
    artifact = Artifact("e1", "tick", name, "metric", storage, location, False, 0.0, expires_at)
    await runtime.store.write(records.insert_artifact, artifact)
    return artifact


async def _indexed(runtime: Runtime) -> list[str]:
    return sorted(a.name for a in await runtime.store.read(records.artifacts_of, "e1"))


def _redis_keys(redis: RedisServer) -> list[str]:
    return sorted(redis.client().keys("loopengine:*"))


async def test_every_storage_is_pruned_of_what_is_past_its_retention(
    runtime: Runtime, redis: RedisServer, tmp_path: Path
) -> None:
    expired = [await _stored(runtime, s, f"old_{s}", 1.0) for s in ("file", "sqlite", "redis")]
    await _stored(runtime, "redis", "kept", 4e9)
    await Daemon(runtime, tmp_path / "loops", DaemonLog(io.StringIO())).prune()
    assert await _indexed(runtime) == ["kept"]
    assert not Path(expired[0].location).exists()
    assert _redis_keys(redis) == ["loopengine:artifact:tick:e1:kept", "loopengine:artifacts:tick"]
    assert redis.client().zrange("loopengine:artifacts:tick", 0, -1) == [
        "loopengine:artifact:tick:e1:kept"
    ]
    database = tmp_path / ".loopengine" / "artifacts.db"
    assert database.exists()
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM loopengine_artifacts").fetchone() == (0,)


async def test_an_artifact_its_storage_cannot_remove_stays_indexed_until_a_later_prune(
    runtime: Runtime, redis: RedisServer, tmp_path: Path
) -> None:
    await _stored(runtime, "redis", "old", 1.0)
    log = io.StringIO()
    daemon = Daemon(runtime, tmp_path / "loops", DaemonLog(log, as_json=True))
    redis.stop()
    await daemon.prune()
    assert await _indexed(runtime) == ["old"]
    [line] = [json.loads(text) for text in log.getvalue().splitlines()]
    assert (line["kind"], line["artifact"]) == ("error", "old")
    assert line["message"].startswith(f"cannot prune: Redis at {redis.url}: ")
    redis.start()
    await daemon.prune()
    assert await _indexed(runtime) == []


async def test_artifacts_a_storage_cannot_remove_hold_back_none_expired_after_them(
    runtime: Runtime, redis: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon_module, "PRUNE_BATCH", 1)
    await _stored(runtime, "redis", "first", 1.0)
    newer = await _stored(runtime, "file", "second", 2.0)
    redis.stop()
    await Daemon(runtime, tmp_path / "loops", DaemonLog(io.StringIO())).prune()
    assert await _indexed(runtime) == ["first"]
    assert not Path(newer.location).exists()
