"""Database URLs as a process opens them: a relative SQLite path made to start at a folder, the
file it names, and how a person names the store (without its password)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from loopengine.errors import StorageError

__all__ = ["StoreUrl", "store_url"]


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A store's URL (with its password: what the store opens), its SQLite file when it names one,
    and what a message shows of it: the file, else the URL without the password."""

    url: str
    file: Path | None
    shown: str


def store_url(url: str, base: Path) -> StoreUrl:
    """``url`` with a relative SQLite path made to start at ``base``; ``StorageError`` when it is
    no URL SQLAlchemy can parse."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise StorageError(f"invalid database URL {url!r}: {exc}") from None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return StoreUrl(url, None, parsed.render_as_string(hide_password=True))
    path = Path(str(parsed.database)).expanduser()
    if not path.is_absolute():
        path = base / path
        url = parsed.set(database=str(path)).render_as_string(hide_password=False)
    return StoreUrl(url, path, str(path))
