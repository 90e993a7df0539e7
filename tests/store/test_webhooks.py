"""Webhook bodies held against replays: the first delivery sending a body holds it until its time
ends; another sending it meanwhile is told which delivery holds it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.store import create_engine, migrate, webhooks


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    built = create_engine(f"sqlite:///{tmp_path / 'store.db'}")
    with built.begin() as connection:
        migrate(connection)
    yield built
    built.dispose()


def _hold(engine: sa.Engine, key: str, delivery: str, now: float) -> str:
    with engine.begin() as connection:
        return webhooks.hold_body(connection, key, delivery, now, until=now + 300)


def test_the_first_delivery_holds_a_body_and_a_second_is_told_it(engine: sa.Engine) -> None:
    assert _hold(engine, "body", "first", now=0.0) == "first"
    assert _hold(engine, "body", "second", now=299.0) == "first"
    assert _hold(engine, "body", "first", now=299.0) == "first"


def test_a_body_is_held_again_once_its_time_ends(engine: sa.Engine) -> None:
    _hold(engine, "body", "first", now=0.0)
    assert _hold(engine, "body", "later", now=300.0) == "later"


def test_other_bodies_are_held_apart_and_ended_holds_are_forgotten(engine: sa.Engine) -> None:
    _hold(engine, "old", "a", now=0.0)
    assert _hold(engine, "new", "b", now=1_000.0) == "b"
    with engine.connect() as connection:
        held = connection.execute(sa.text("SELECT key FROM webhook_bodies")).scalars().all()
    assert held == ["new"]
