"""Feature flags: set again, a flag is switched in place; listed, they are records by name."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store import flags
from loopengine.store.flags import Flag


def test_flags_are_listed_by_name_as_last_set(connection: sa.Connection) -> None:
    flags.set_flag(connection, "beta", True, 2.0)
    flags.set_flag(connection, "alpha", True, 1.0)
    flags.set_flag(connection, "alpha", False, 3.0)
    assert flags.list_flags(connection) == [Flag("alpha", False, 3.0), Flag("beta", True, 2.0)]
    assert flags.flag_enabled(connection, "beta")
    assert not flags.flag_enabled(connection, "alpha")


def test_a_flag_reads_as_json_with_an_iso_time() -> None:
    assert Flag("beta", True, 0.5).as_json() == {
        "name": "beta",
        "enabled": True,
        "updated_at": "1970-01-01T00:00:00.500+00:00",
    }
