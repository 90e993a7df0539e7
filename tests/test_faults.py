"""A task that keeps failing pauses 1 s, then twice as long each time, up to a bound."""

from __future__ import annotations

from loopengine._faults import BACKOFF_MAX_S, next_pause


def test_pauses_double_from_a_second_up_to_the_bound() -> None:
    pauses, pause = [], None
    for _ in range(8):
        pause = next_pause(pause)
        pauses.append(pause)
    assert pauses == [1.0, 2.0, 4.0, 8.0, 16.0, BACKOFF_MAX_S, BACKOFF_MAX_S, BACKOFF_MAX_S]
