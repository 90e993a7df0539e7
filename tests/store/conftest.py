"""A migrated SQLite store on disk, as repository functions see it: a connection; and an empty
database of each backend, for the migration tests to build an older schema in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.store import create_engine, migrate
from tests.postgres import PostgresServer


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
        yield opened
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    """An empty database of each backend (modules with their own ``engine`` keep theirs)."""
    if request.param == "sqlite":
        built = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
        yield built
        built.dispose()
        return
    server: PostgresServer = request.getfixturevalue("shared_postgres")
    with server.database() as url:
        built = create_engine(url)
        yield built
        built.dispose()
