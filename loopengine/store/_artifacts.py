"""Artifact backends by storage name: files, or any SQL database SQLAlchemy reaches."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from loopengine._secrets import redact
from loopengine.errors import StorageError
from loopengine.store._database import create_engine

__all__ = ["ArtifactWriter"]

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

    def url(self, storage: str) -> str:
        try:
            return self.urls[storage]
        except KeyError:
            raise StorageError(
                f"storage '{storage}' is not configured: add it under 'storage:' in loopengine.yaml"
            ) from None

    def write(self, storage: str, record: Mapping[str, Any]) -> str:
        """Store one artifact (secret values masked); returns where it went. Raises
        ``StorageError`` saying why not."""
        record = redact(record)
        url = self.url(storage)
        scheme = urlsplit(url).scheme.split("+")[0]
        if scheme == "file":
            return self._file(url, record)
        if scheme in ("sqlite", "postgresql", "postgres"):
            return self._sql(url, record)
        if scheme.startswith("redis"):
            raise StorageError(f"storage '{storage}' ({url}) is Redis: install the 'redis' package")
        raise StorageError(f"storage '{storage}' has an unsupported URL scheme '{scheme}'")

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
        engine = self._engines.get(url)
        if engine is None:
            engine = self._engines[url] = create_engine(url)
        try:
            with engine.begin() as connection:
                _table.create(connection, checkfirst=True)
                row = {
                    key: record[key]
                    for key in ("loop_id", "execution_id", "name", "type", "content")
                }
                result = connection.execute(_table.insert().values(**row, created_at=time.time()))
                key = result.inserted_primary_key[0] if result.inserted_primary_key else None
        except sa.exc.SQLAlchemyError as exc:
            raise StorageError(
                f"cannot write artifact to {url}: {getattr(exc, 'orig', exc)}"
            ) from None
        return f"{url}#loopengine_artifacts/{key}"

    def close(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()
