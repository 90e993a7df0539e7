"""Changes of executions handed to their followers: bounded per follower, of the execution
followed only, and what moved between two looks at the store."""

from __future__ import annotations

import anyio

from loopengine.app import Changes
from loopengine.app._changes import moved


def test_a_follower_takes_each_change_in_order() -> None:
    changes = Changes()

    async def main() -> list[tuple[int, str | None, str]]:
        with changes.following(None, 10) as follower:
            changes.committed("a", "started")
            changes.committed("b", "act")
            taken = await follower.taken(0)
        return [(change.seq, change.execution_id, change.what) for change in taken]

    assert anyio.run(main) == [(1, "a", "started"), (2, "b", "act")]


def test_a_follower_of_one_execution_takes_only_its_changes() -> None:
    changes = Changes()

    async def main() -> list[str | None]:
        with changes.following("b", 10) as follower:
            changes.committed("a", "started")
            changes.committed("b", "act")
            return [change.execution_id for change in await follower.taken(0)]

    assert anyio.run(main) == ["b"]


def test_a_follower_that_falls_behind_is_dropped() -> None:
    changes = Changes()
    with changes.following(None, 3) as follower:
        for n in range(4):
            changes.committed(f"e{n}", "act")
    assert follower.dropped
    assert len(follower.pending) == 3


def test_a_follower_leaves_when_its_block_ends() -> None:
    changes = Changes()
    with changes.following(None, 3):
        pass
    changes.committed("a", "act")
    assert not changes.followers


def test_closing_ends_every_follower() -> None:
    changes = Changes()
    with changes.following(None, 3) as follower:
        changes.close()
        assert follower.closed


def test_what_started_moved_on_or_left_between_two_looks() -> None:
    before = {"a": ("running", "act", None), "b": ("running", "decide", None)}
    after = {"a": ("running", "act", None), "b": ("running", "act", None)}
    after["c"] = ("running", None, None)
    assert moved(before, after) == {"b", "c"}
    assert moved(after, {}) == {"a", "b", "c"}
    assert moved(after, after) == set()
