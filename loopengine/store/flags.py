"""Feature flags that gate actions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from loopengine._json import JSONObject
from loopengine.store._record import iso
from loopengine.store._tables import feature_flags

__all__ = ["Flag", "flag_enabled", "list_flags", "set_flag"]


@dataclass(frozen=True, slots=True)
class Flag:
    """A flag as ``flags list`` shows it: on or off since ``updated_at``."""

    name: str
    enabled: bool
    updated_at: float

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Flag:
        return cls(row["name"], bool(row["enabled"]), row["updated_at"])

    def as_json(self) -> JSONObject:
        """The flag as ``flags list --json`` prints it."""
        return {"name": self.name, "enabled": self.enabled, "updated_at": iso(self.updated_at)}


_ENABLED = sa.select(feature_flags.c.enabled).where(feature_flags.c.name == sa.bindparam("name"))


def set_flag(connection: sa.Connection, name: str, enabled: bool, at: float) -> None:
    updated = connection.execute(
        feature_flags.update()
        .where(feature_flags.c.name == name)
        .values(enabled=enabled, updated_at=at)
    )
    if updated.rowcount == 0:
        connection.execute(feature_flags.insert().values(name=name, enabled=enabled, updated_at=at))


def flag_enabled(connection: sa.Connection, name: str) -> bool:
    return bool(connection.execute(_ENABLED, {"name": name}).scalar())


def list_flags(connection: sa.Connection) -> list[Flag]:
    """Every flag set, by name."""
    query = sa.select(feature_flags).order_by(feature_flags.c.name)
    return [Flag.from_row(row) for row in connection.execute(query).mappings()]
