"""The chat's versioned instructions per category: one active version, added only over the one
it was proposed against, judged while watched, rolled back to the version it replaced."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store import prompts


def _add(connection: sa.Connection, text: str, parent: int, category: str = "code") -> int | None:
    with connection.begin():
        return prompts.add_version(
            connection,
            category,
            text,
            parent=parent,
            baseline=6.0,
            reason="better",
            execution_id=None,
            now=float(parent),
        )


def test_a_new_version_is_the_only_active_one_and_is_watched(connection: sa.Connection) -> None:
    assert _add(connection, "Be brief.", 0) == 1
    assert _add(connection, "Be briefer.", 1) == 2
    active = prompts.active(connection)
    assert (active["code"]["version"], active["code"]["state"]) == (2, "watched")
    assert [row["state"] for row in prompts.versions(connection, "code")] == ["watched", "retired"]


def test_a_proposal_made_against_an_older_version_is_dropped(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    assert _add(connection, "Show code.", 0) is None
    assert prompts.active(connection)["code"]["text"] == "Be brief."


def test_a_rollback_restores_the_version_it_replaced(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    _add(connection, "Be rude.", 1)
    with connection.begin():
        assert prompts.roll_back(connection, "code", 2) == 1
        assert prompts.roll_back(connection, "code", 2) is None
    active = prompts.active(connection)["code"]
    assert (active["version"], active["state"]) == (1, "confirmed")


def test_rolling_back_the_first_version_leaves_no_instructions(connection: sa.Connection) -> None:
    _add(connection, "Be rude.", 0)
    with connection.begin():
        assert prompts.roll_back(connection, "code", 1) == 0
    assert prompts.active(connection) == {}


def test_judging_counts_watched_cycles_until_confirmed(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    with connection.begin():
        prompts.judged(connection, "code", 1, confirm=False)
        prompts.judged(connection, "code", 1, confirm=True)
        prompts.judged(connection, "code", 1, confirm=True)
    row = prompts.active(connection)["code"]
    assert (row["watched"], row["state"]) == (2, "confirmed")
