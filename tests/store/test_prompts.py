"""The chat's versioned instructions per category: one active version, added only over the one
it was proposed against, judged while watched, rolled back to the version it replaced."""

from __future__ import annotations

import sqlalchemy as sa

import loopengine.store._tables as tables
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
    assert (active["code"].version, active["code"].state) == (2, "watched")
    assert [row.state for row in prompts.versions(connection, "code")] == ["watched", "retired"]


def test_a_proposal_made_against_an_older_version_is_dropped(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    assert _add(connection, "Show code.", 0) is None
    assert prompts.active(connection)["code"].text == "Be brief."


def test_a_rollback_restores_the_version_it_replaced(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    _add(connection, "Be rude.", 1)
    with connection.begin():
        assert prompts.roll_back(connection, "code", 2) == 1
        assert prompts.roll_back(connection, "code", 2) is None
    active = prompts.active(connection)["code"]
    assert (active.version, active.state) == (1, "confirmed")


def test_rolling_back_the_first_version_leaves_no_instructions(connection: sa.Connection) -> None:
    _add(connection, "Be rude.", 0)
    with connection.begin():
        assert prompts.roll_back(connection, "code", 1) == 0
    assert prompts.active(connection) == {}


def test_judging_counts_watched_cycles_until_confirmed(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    with connection.begin():
        prompts.judged(connection, "code", 1, 10, confirm=False)
        prompts.judged(connection, "code", 1, 12, confirm=True)
        prompts.judged(connection, "code", 1, 14, confirm=True)
    row = prompts.active(connection)["code"]
    assert (row.watched, row.judged_id, row.state) == (2, 12, "confirmed")


def test_a_rollback_skips_versions_rolled_back_already(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    _add(connection, "Be rude.", 1)
    with connection.begin():
        connection.execute(
            tables.chat_prompts.update()
            .where(tables.chat_prompts.c.version == 1)
            .values(state="rolled_back")
        )
        assert prompts.roll_back(connection, "code", 2) == 0
    assert prompts.rolled_back_texts(connection, "code") == {"be brief", "be rude"}


def test_a_proposal_against_a_version_another_writer_replaced_writes_nothing(
    connection: sa.Connection,
) -> None:
    _add(connection, "Be brief.", 0)
    with connection.begin():
        connection.execute(tables.chat_prompts.update().values(state="retired"))
        connection.execute(
            tables.chat_prompts.insert().values(
                category="code", version=2, text="Other.", state="confirmed", parent=1,
                reason="other", created_at=0.0,
            )
        )  # fmt: skip
    assert _add(connection, "Show code.", 1) is None
    assert [row.version for row in prompts.versions(connection, "code")] == [2, 1]


def test_the_active_version_of_one_category_is_read_alone(connection: sa.Connection) -> None:
    _add(connection, "Be brief.", 0)
    _add(connection, "Be briefer.", 1)
    _add(connection, "Show code.", 0, category="other")
    found = prompts.active_of(connection, "code")
    assert found is not None
    assert (found.version, found.text, found.state) == (2, "Be briefer.", "watched")
    assert prompts.active_of(connection, "none") is None
