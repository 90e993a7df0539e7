"""A migrated SQLite store on disk, as repository functions see it: a connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.store import create_engine, migrate


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with engine.connect() as opened:
        with opened.begin():
            migrate(opened)
        yield opened
    engine.dispose()
