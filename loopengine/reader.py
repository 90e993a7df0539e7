"""Read-only access to the store for the commands that only read (``history``, ``show``…).

They never write: no migration, no recovery of interrupted executions, no escalation, the
journal mode left as it is, and a SQLite store that does not exist yet is not created (nothing
has run, so there is nothing to read).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from loopengine.settings import read_settings
from loopengine.store import Store

__all__ = ["open_reader"]


@asynccontextmanager
async def open_reader(config: Path | None) -> AsyncIterator[Store | None]:
    """The store, opened read-only; None when nothing was ever recorded there (no SQLite file,
    or a database never migrated)."""
    settings = read_settings(config)
    file = settings.sqlite_file
    if file is not None and not file.expanduser().is_file():
        yield None
        return
    async with Store.open(settings.database_url, read_only=True) as store:
        yield store if store.schema_version else None
