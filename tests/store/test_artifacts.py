"""Artifact storages: what each holds once an artifact is written, and that each forgets it when
removed (Redis and PostgreSQL against real servers on loopback)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.errors import StorageError
from loopengine.store import ArtifactWriter, shown_url
from tests.postgres import PostgresServer
from tests.redis import RedisServer, redis_server

RECORD = {
    "loop_id": "seo_audit_loop",
    "execution_id": "e1",
    "name": "loop_metrics",
    "type": "metric",
    "content": {"usage": {"tokens": 3}},
}


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def writer(tmp_path: Path, redis: RedisServer) -> Iterator[ArtifactWriter]:
    redis.client().flushdb()
    built = ArtifactWriter({"redis": redis.url}, tmp_path)
    try:
        yield built
    finally:
        built.close()


def test_a_redis_artifact_is_one_json_key_in_its_loops_index(
    writer: ArtifactWriter, redis: RedisServer
) -> None:
    location = writer.write("redis", RECORD, retention_s=30 * 86400)
    key = "loopengine:artifact:seo_audit_loop:e1:loop_metrics"
    assert location == f"{redis.url}#{key}"
    client = redis.client()
    stored = json.loads(client.get(key))
    assert (stored["name"], stored["content"]) == ("loop_metrics", RECORD["content"])
    assert client.zrange("loopengine:artifacts:seo_audit_loop", 0, -1) == [key]


def test_a_redis_artifact_expires_with_its_retention(
    writer: ArtifactWriter, redis: RedisServer
) -> None:
    writer.write("redis", RECORD, retention_s=86400.5)
    assert (
        86400 <= redis.client().ttl("loopengine:artifact:seo_audit_loop:e1:loop_metrics") <= 86401
    )


def test_a_redis_artifact_without_retention_is_kept(
    writer: ArtifactWriter, redis: RedisServer
) -> None:
    writer.write("redis", RECORD)
    assert redis.client().ttl("loopengine:artifact:seo_audit_loop:e1:loop_metrics") == -1


def _held(storage: str, location: str, writer: ArtifactWriter, redis: RedisServer) -> bool:
    """Whether the storage still holds the artifact at ``location``."""
    if storage == "file":
        return Path(location).exists()
    if storage == "redis":
        client = redis.client()
        key = location.partition("#")[2]
        indexed = client.zscore("loopengine:artifacts:seo_audit_loop", key) is not None
        return bool(client.exists(key)) or indexed
    engine = sa.create_engine(writer.urls[storage])
    with engine.connect() as connection:
        count = connection.exec_driver_sql("SELECT count(*) FROM loopengine_artifacts").scalar()
    engine.dispose()
    return bool(count)


@pytest.mark.parametrize("storage", ["file", "sqlite", "redis"])
def test_each_storage_forgets_an_artifact_removed(
    storage: str, writer: ArtifactWriter, redis: RedisServer
) -> None:
    location = writer.write(storage, RECORD, retention_s=60)
    assert _held(storage, location, writer, redis)
    writer.remove(storage, location)
    assert not _held(storage, location, writer, redis)
    writer.remove(storage, location)


def test_supabase_is_a_postgresql_storage(
    tmp_path: Path, redis: RedisServer, shared_postgres: PostgresServer
) -> None:
    with shared_postgres.database() as url:
        writer = ArtifactWriter({"supabase": url}, tmp_path)
        try:
            location = writer.write("supabase", RECORD)
            assert location.endswith("#loopengine_artifacts/1")
            assert _held("supabase", location, writer, redis)
            writer.remove("supabase", location)
            assert not _held("supabase", location, writer, redis)
        finally:
            writer.close()


def test_a_location_never_shows_the_password(tmp_path: Path, redis: RedisServer) -> None:
    secret_url = redis.url.replace("redis://", "redis://:hunter2@")
    admin = redis.client()
    admin.config_set("requirepass", "hunter2")
    writer = ArtifactWriter({"redis": secret_url}, tmp_path)
    try:
        location = writer.write("redis", RECORD)
    finally:
        writer.close()
        admin.config_set("requirepass", "")
    assert location.startswith(f"{redis.url}#")
    assert "hunter2" not in location


def test_an_unreachable_redis_fails_the_artifact_in_one_line(tmp_path: Path) -> None:
    with redis_server() as gone:
        url = gone.url.replace("redis://", "redis://:hunter2@")
    writer = ArtifactWriter({"redis": url}, tmp_path)
    with pytest.raises(StorageError) as caught:
        writer.write("redis", RECORD)
    said = str(caught.value)
    assert said.startswith(f"Redis at {gone.url}: ")
    assert "\n" not in said
    assert "hunter2" not in said


def test_without_redis_py_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    writer = ArtifactWriter({"redis": "redis://127.0.0.1:6379/0"}, tmp_path)
    with pytest.raises(StorageError, match=r"pip install 'loopengine\[redis\]'"):
        writer.write("redis", RECORD)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cr#t@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://user:a/b?c@127.0.0.1/0", "redis://127.0.0.1/0"),
        ("redis://127.0.0.1/0?password=hunter2&db=1", "redis://127.0.0.1/0?password=***&db=1"),
        ("postgresql://app:pw@db.example/app", "postgresql://db.example/app"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
    ids=["hash in password", "slash and question mark", "password in query", "postgres", "none"],
)
def test_a_shown_url_keeps_no_credential_however_it_is_written(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_an_artifact_kept_zero_days_on_redis_is_written(writer: ArtifactWriter) -> None:
    location = writer.write("redis", RECORD, retention_s=0.0)
    assert location.endswith(":loop_metrics")


def test_a_location_naming_no_row_is_a_storage_error(writer: ArtifactWriter) -> None:
    with pytest.raises(StorageError, match=r"names no row"):
        writer.remove("sqlite", "sqlite:///x#loopengine_artifacts/None")
