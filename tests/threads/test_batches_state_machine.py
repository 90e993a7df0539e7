"""State machine: replayed, reordered and racing batches leave exactly one row per unique call."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from loopengine.errors import ThreadError
from loopengine.store import create_engine, migrate, threads
from loopengine.threads import new_batch

SESSION = "s"


def _round(call_id: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "t", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": call_id})},
    ]


class Threads(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.engine = create_engine("sqlite://")
        self.connection = self.engine.connect()
        with self.connection.begin():
            migrate(self.connection)
        self.sent: list[tuple[str, list[dict[str, Any]]]] = []
        self.applied_calls: set[str] = set()
        self.applied_batches = 0
        self.counter = 0

    def teardown(self) -> None:
        self.connection.close()
        self.engine.dispose()

    def _append(self, operation: str, messages: list[dict[str, Any]], if_match: int | None) -> Any:
        with self.connection.begin():
            batch = new_batch(SESSION, messages, operation_id=operation, now=1.0, if_match=if_match)
            return threads.append_batch(self.connection, batch)

    def _version(self) -> int:
        with self.connection.begin():
            return threads.thread_version(self.connection, SESSION)

    @rule()
    def new_round(self) -> None:
        self.counter += 1
        call, operation = f"call{self.counter}", f"op{self.counter}"
        messages = _round(call)
        result = self._append(operation, messages, self._version())
        assert result.applied
        self.sent.append((operation, messages))
        self.applied_calls.add(call)
        self.applied_batches += 1

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        operation, messages = data.draw(st.sampled_from(self.sent))
        result = self._append(operation, messages, None)
        assert not result.applied

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def late_duplicate_of_an_old_round(self, data: st.DataObject) -> None:
        _, messages = data.draw(st.sampled_from(self.sent))
        self.counter += 1
        result = self._append(f"late{self.counter}", messages[1:], None)
        assert result.applied
        assert result.stored == 0
        self.applied_batches += 1

    @rule()
    def two_writers_race(self) -> None:
        seen = self._version()
        self.counter += 1
        first, second = f"call{self.counter}a", f"call{self.counter}b"
        assert self._append(f"op{self.counter}a", _round(first), seen).applied
        with pytest.raises(ThreadError) as caught:
            self._append(f"op{self.counter}b", _round(second), seen)
        assert caught.value.status == 412
        assert self._append(f"op{self.counter}b", _round(second), self._version()).applied
        self.sent += [(f"op{self.counter}a", _round(first)), (f"op{self.counter}b", _round(second))]
        self.applied_calls |= {first, second}
        self.applied_batches += 2

    @invariant()
    def one_row_per_unique_call(self) -> None:
        with self.connection.begin():
            thread = threads.load_thread(self.connection, SESSION)
            version = threads.thread_version(self.connection, SESSION)
        tool_ids = [m.tool_call_id for m in thread if m.role == "tool"]
        assert sorted(tool_ids) == sorted(self.applied_calls)
        assert version == self.applied_batches
        with self.connection.begin():
            duplicates = self.connection.execute(
                sa.text(
                    "SELECT tool_call_id FROM chat_messages WHERE tool_call_id IS NOT NULL GROUP BY tool_call_id HAVING count(*) > 1"
                )
            ).all()
        assert duplicates == []


TestThreads = Threads.TestCase
TestThreads.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
