"""What ``status`` shows of a daemon's row: the next fire after now, however long ago the row was
written (the daemon writes its upcoming slots every third of a lease)."""

from __future__ import annotations

from loopengine.store.status import next_fire


def test_the_next_fire_is_the_first_upcoming_slot_after_now() -> None:
    assert next_fire([100.0, 102.0, 104.0], now=103.0) == 104.0


def test_a_slot_at_now_has_passed() -> None:
    assert next_fire([100.0, 102.0], now=100.0) == 102.0


def test_a_late_daemon_shows_its_last_slot() -> None:
    assert next_fire([100.0, 102.0], now=110.0) == 102.0


def test_a_trigger_without_slots_has_no_next_fire() -> None:
    assert next_fire([], now=110.0) is None
