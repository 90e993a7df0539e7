"""Read-only access to the store for the commands that only read (``history``, ``show``…).

They never write: no migration, no recovery of interrupted executions, no escalation, the
journal mode left as it is, and a store that does not exist is not created: they say where they
looked instead (a command run from the wrong folder would read an empty store, or make one). No
event loop either: they start faster without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from loopengine.app._settings import Settings, read_settings
from loopengine.store import Reader, open_read_only

__all__ = ["AwaitedReader", "open_reader", "read_store"]

T = TypeVar("T")


@contextmanager
def read_store(settings: Settings) -> Iterator[Reader]:
    """The store of ``settings``, opened read-only; ``ContractError`` naming where it was looked
    for when nothing was ever recorded there (no SQLite file, or a database never migrated)."""
    file = settings.sqlite_file
    if file is not None and not file.is_file():
        raise settings.no_store()
    with open_read_only(settings.database_url) as reader:
        if not reader.schema_version:
            raise settings.no_store()
        yield reader


@contextmanager
def open_reader(config: Path | None) -> Iterator[Reader]:
    """The store of the config ``config`` names (or the one found), opened as ``read_store``."""
    with read_store(read_settings(config)) as reader:
        yield reader


class AwaitedReader:
    """A read-only ``Reader`` as the async operations take a store (``await store.read(…)``),
    for a command that reads in an event loop because it may call a node too (``knowledge
    search`` embeds its query)."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    async def read(self, operation: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return self._reader.read(operation, *args, **kwargs)
