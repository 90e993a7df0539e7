"""Read-only access to the store for the commands that only read (``history``, ``show``…).

They never write: no migration, no recovery of interrupted executions, no escalation, the
journal mode left as it is, and a SQLite store that does not exist yet is not created (nothing
has run, so there is nothing to read). No event loop either: they start faster without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loopengine.settings import read_settings
from loopengine.store import Reader, open_read_only

__all__ = ["open_reader"]


@contextmanager
def open_reader(config: Path | None) -> Iterator[Reader | None]:
    """The store, opened read-only; None when nothing was ever recorded there (no SQLite file,
    or a database never migrated)."""
    settings = read_settings(config)
    file = settings.sqlite_file
    if file is not None and not file.expanduser().is_file():
        yield None
        return
    with open_read_only(settings.database_url) as reader:
        yield reader if reader.schema_version else None
