"""Artifact backends by storage name: files, any SQL database SQLAlchemy reaches, or Redis.

In Redis an artifact is one JSON string at ``loopengine:artifact:{loop}:{execution}:{name}``
(expiring with its retention) and a member of its loop's index, the sorted set
``loopengine:artifacts:{loop}`` scored by creation time, so a loop's artifacts are listed and
pruned without a scan of the keyspace."""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from loopengine._secrets import redact
from loopengine.errors import StorageError
from loopengine.store._database import create_engine
from loopengine.store._redis import redis_client, redis_failure, shown_url

if TYPE_CHECKING:
    import redis

__all__ = ["REDIS_PREFIX", "ArtifactWriter"]

REDIS_PREFIX = "loopengine:"
_SQL_KEY = "#loopengine_artifacts/"

_table = sa.Table(
    "loopengine_artifacts",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("loop_id", sa.String(200), nullable=False),
    sa.Column("execution_id", sa.String(32), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("content", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)


class ArtifactWriter:
    """Writes artifacts where their storage name points (``file`` and ``sqlite`` are built in)."""

    def __init__(self, storage: Mapping[str, str], base: Path) -> None:
        self.base = base
        home = base / ".loopengine"
        self.urls = {
            "file": f"file://{home / 'artifacts'}",
            "sqlite": f"sqlite:///{home / 'artifacts.db'}",
            **storage,
        }
        self._engines: dict[str, sa.Engine] = {}
        self._redis: dict[str, redis.Redis] = {}

    def url(self, storage: str) -> str:
        try:
            return self.urls[storage]
        except KeyError:
            raise StorageError(
                f"storage '{storage}' is not configured: add it under 'storage:' in loopengine.yaml"
            ) from None

    def _backend(self, storage: str) -> tuple[str, str]:
        """The URL ``storage`` names and its kind: ``file``, ``sql`` or ``redis``."""
        url = self.url(storage)
        scheme = urlsplit(url).scheme.split("+")[0]
        if scheme == "file":
            return url, "file"
        if scheme in ("sqlite", "postgresql", "postgres"):
            return url, "sql"
        if scheme in ("redis", "rediss"):
            return url, "redis"
        raise StorageError(f"storage '{storage}' has an unsupported URL scheme '{scheme}'")

    def write(
        self, storage: str, record: Mapping[str, Any], retention_s: float | None = None
    ) -> str:
        """Store one artifact (secret values masked), kept ``retention_s`` where the backend
        expires data itself (Redis); returns where it went. ``StorageError`` saying why not."""
        record = redact(record)
        url, kind = self._backend(storage)
        if kind == "file":
            return self._file(url, record)
        if kind == "sql":
            return self._sql(url, record)
        return self._redis_write(url, record, retention_s)

    def remove(self, storage: str, location: str) -> None:
        """Delete the artifact that ``write`` stored at ``location`` (gone already is fine);
        ``StorageError`` when the backend cannot be reached."""
        url, kind = self._backend(storage)
        if kind == "file":
            try:
                Path(location).unlink(missing_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot remove {location}: {exc.strerror or exc}") from None
        elif kind == "sql":
            try:
                row_id = int(location.rpartition(_SQL_KEY)[2])
            except ValueError:
                raise StorageError(f"artifact location {location!r} names no row") from None
            self._sql_run(url, lambda c: c.execute(_table.delete().where(_table.c.id == row_id)))
        else:
            key = location.partition("#")[2]
            loop_id = key.removeprefix(f"{REDIS_PREFIX}artifact:").partition(":")[0]

            def forget(pipeline: redis.client.Pipeline) -> None:
                pipeline.delete(key)
                pipeline.zrem(_redis_index(loop_id), key)

            self._redis_run(url, forget)

    def _file(self, url: str, record: Mapping[str, Any]) -> str:
        parsed = urlsplit(url)
        folder = (
            Path(parsed.netloc + parsed.path) / str(record["loop_id"]) / str(record["execution_id"])
        )
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{record['name']}.json"
            with tempfile.NamedTemporaryFile(
                "w", dir=folder, delete=False, suffix=".tmp"
            ) as handle:
                json.dump(record["content"], handle, indent=2, default=str)
            os.replace(handle.name, target)
        except OSError as exc:
            raise StorageError(
                f"cannot write artifact to {folder}: {exc.strerror or exc}"
            ) from None
        return str(target)

    def _sql(self, url: str, record: Mapping[str, Any]) -> str:
        row = {key: record[key] for key in ("loop_id", "execution_id", "name", "type", "content")}

        def insert(connection: sa.Connection) -> Any:
            result = connection.execute(_table.insert().values(**row, created_at=time.time()))
            return result.inserted_primary_key[0] if result.inserted_primary_key else None

        return f"{shown_url(url)}{_SQL_KEY}{self._sql_run(url, insert)}"

    def _sql_run(self, url: str, work: Callable[[sa.Connection], Any]) -> Any:
        """``work`` in one transaction on the artifacts table of ``url`` (made when missing)."""
        engine = self._engines.get(url)
        if engine is None:
            engine = self._engines[url] = create_engine(url)
        try:
            with engine.begin() as connection:
                _table.create(connection, checkfirst=True)
                return work(connection)
        except sa.exc.SQLAlchemyError as exc:
            raise StorageError(
                f"artifacts at {shown_url(url)}: {getattr(exc, 'orig', exc)}"
            ) from None

    def _redis_write(self, url: str, record: Mapping[str, Any], retention_s: float | None) -> str:
        loop_id, execution_id, name = (str(record[k]) for k in ("loop_id", "execution_id", "name"))
        key = f"{REDIS_PREFIX}artifact:{loop_id}:{execution_id}:{name}"
        now = time.time()
        value = json.dumps({**record, "created_at": now}, default=str)
        expiry = max(1, math.ceil(retention_s)) if retention_s is not None else None

        def store(pipeline: redis.client.Pipeline) -> None:
            pipeline.set(key, value, ex=expiry)
            pipeline.zadd(_redis_index(loop_id), {key: now})

        self._redis_run(url, store)
        return f"{shown_url(url)}#{key}"

    def _redis_run(self, url: str, commands: Callable[[redis.client.Pipeline], None]) -> None:
        """What ``commands`` queue on a pipeline of ``url``'s server, run as one transaction."""
        client = self._redis.get(url)
        if client is None:
            client = self._redis[url] = redis_client(url)
        import redis

        pipeline = client.pipeline(transaction=True)
        commands(pipeline)
        try:
            pipeline.execute()
        except redis.RedisError as exc:
            raise redis_failure(url, exc) from None

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()
        for client in self._redis.values():
            client.close()
        self._redis.clear()


def _redis_index(loop_id: str) -> str:
    return f"{REDIS_PREFIX}artifacts:{loop_id}"
