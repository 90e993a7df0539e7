"""What the chat remembers of its users: exchanges rotated per user, counted, and the profile
and summary rows the memory loop writes."""

from __future__ import annotations

import sqlalchemy as sa

from loopengine.store import memory


def _exchange(text: str = "hello") -> dict[str, str]:
    return {"session_id": "s", "category": "code", "message": text, "reply": "r" * 5000}


def _remember(connection: sa.Connection, user: str, count: int, keep: int = 50) -> None:
    with connection.begin():
        for n in range(count):
            memory.add_exchange(connection, user, _exchange(f"message {n}"), keep, float(n))


def test_a_user_keeps_only_the_newest_exchanges(connection: sa.Connection) -> None:
    _remember(connection, "ada", 7, keep=3)
    kept = memory.exchanges(connection, "ada", 50)
    assert [row.message for row in kept] == ["message 4", "message 5", "message 6"]


def test_texts_are_cut_and_every_exchange_is_counted(connection: sa.Connection) -> None:
    _remember(connection, "ada", 4, keep=2)
    row = memory.profile(connection, "ada")
    assert row is not None
    assert row.exchanges == 4
    assert len(memory.exchanges(connection, "ada", 1)[0].reply) == memory.EXCHANGE_TEXT


def test_rotation_of_one_user_leaves_the_others_alone(connection: sa.Connection) -> None:
    _remember(connection, "ada", 2)
    _remember(connection, "bob", 5, keep=1)
    assert len(memory.exchanges(connection, "ada", 50)) == 2


def test_a_profile_is_stale_until_it_has_read_every_exchange(connection: sa.Connection) -> None:
    _remember(connection, "ada", 3)
    assert [row.user_id for row in memory.stale_profiles(connection, 10)] == ["ada"]
    memory.put_profile(connection, "ada", {"language": "en"}, at=3, now=9.0)
    assert memory.stale_profiles(connection, 10) == []


def test_a_summary_is_due_after_enough_new_exchanges(connection: sa.Connection) -> None:
    _remember(connection, "ada", 12)
    _remember(connection, "bob", 4)
    assert [row.user_id for row in memory.due_summaries(connection, 10, 5)] == ["ada"]
    memory.put_summary(connection, "ada", "Builds a compiler.", "M1", at=12, now=20.0)
    assert memory.due_summaries(connection, 10, 5) == []
    assert memory.most_pending(connection) == 4
