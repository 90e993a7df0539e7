"""Events appended once per key: a stream entry delivered again before it was acknowledged is
not appended again."""

from __future__ import annotations

from loopengine.store import Store, signals
from tests.store.test_queue import scenario


def _names(events: list[signals.Event]) -> list[str]:
    return sorted(event.name for event in events)


def test_an_entry_delivered_again_while_held_is_not_appended_again() -> None:
    async def steps(store: Store) -> tuple[list[int], list[str]]:
        entries = [("redis:s:1-0", "order.paid", {"order": 7})]
        first = await store.write(signals.insert_events_once, entries, "redis", 1.0, 99.0)
        again = await store.write(signals.insert_events_once, entries, "redis", 2.0, 99.0)
        return [first, again], _names(await store.read(signals.recent_events, 0.0))

    assert scenario(steps) == ([1, 0], ["order.paid"])


def test_a_released_key_holds_its_entry_until_its_shorter_time_only() -> None:
    async def steps(store: Store) -> list[int]:
        entries = [("redis:s:1-0", "order.paid", {})]
        await store.write(signals.insert_events_once, entries, "redis", 1.0, 99.0)
        released = [key for key, _, _ in entries]
        during = await store.write(
            signals.insert_events_once, entries, "redis", 2.0, 99.0, released, 10.0
        )
        after = await store.write(signals.insert_events_once, entries, "redis", 11.0, 99.0)
        return [during, after]

    assert scenario(steps) == [0, 1]


def test_a_hold_past_its_time_no_longer_holds_its_entry() -> None:
    async def steps(store: Store) -> int:
        entries = [("redis:s:1-0", "order.paid", {})]
        await store.write(signals.insert_events_once, entries, "redis", 1.0, 5.0)
        return int(await store.write(signals.insert_events_once, entries, "redis", 6.0, 99.0))

    assert scenario(steps) == 1
