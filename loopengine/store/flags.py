"""Feature flags that gate actions."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store._tables import feature_flags

__all__ = ["flag_enabled", "list_flags", "set_flag"]

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


def list_flags(connection: sa.Connection) -> list[tuple[str, bool, float]]:
    query = sa.select(feature_flags).order_by(feature_flags.c.name)
    return [(row.name, row.enabled, row.updated_at) for row in connection.execute(query)]
