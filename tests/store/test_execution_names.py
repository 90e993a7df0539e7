"""The ids a name given on the command line may stand for: a whole id, or a prefix of one."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store import ExecutionRow, executions


def _add(connection: sa.Connection, *ids: str) -> None:
    for execution_id in ids:
        executions.insert_execution(
            connection,
            ExecutionRow(
                id=execution_id,
                loop_id="tick",
                loop_version="v",
                loop_file="tick.yaml",
                status="finished",
                job_id=execution_id,
                trigger_type="manual",
                durability="phase",
                dry_run=False,
                started_at=1.0,
            ),
        )


def test_a_prefix_names_the_ids_it_starts_up_to_the_limit(connection: sa.Connection) -> None:
    _add(connection, "abcd1", "abcd2", "abcd3", "abce1")
    assert executions.ids_named(connection, "abcd", 4, 2) == ["abcd1", "abcd2"]
    assert executions.ids_named(connection, "abce", 4, 2) == ["abce1"]


def test_a_name_shorter_than_the_shortest_prefix_names_only_itself(
    connection: sa.Connection,
) -> None:
    _add(connection, "abc", "abcd1")
    assert executions.ids_named(connection, "abc", 4, 6) == ["abc"]
    assert executions.ids_named(connection, "ab", 4, 6) == []


def test_a_whole_id_names_itself_and_an_unknown_name_nothing(connection: sa.Connection) -> None:
    whole = "0123456789abcdef0123456789abcdef"
    _add(connection, whole, whole + "x")
    assert executions.ids_named(connection, whole, 4, 6) == [whole]
    assert executions.ids_named(connection, "f" * 32, 4, 6) == []
    assert executions.ids_named(connection, "ffff", 4, 6) == []
