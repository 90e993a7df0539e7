"""Anti-loop guard v2: repeats, repeated failures and ping-pong stop a stage."""

from __future__ import annotations

from loopengine.llm import LoopGuard, call_key, canonical


def test_canonical_form_ignores_key_order_number_form_and_spacing() -> None:
    assert canonical({"b": 1.0, "a": {"d": " x   y ", "c": [2.0, 2.5]}}) == {
        "a": {"c": [2, 2.5], "d": "x y"},
        "b": 1,
    }


def test_equivalent_calls_have_the_same_key() -> None:
    assert call_key("list_dir", {"path": ".", "depth": 1.0}) == call_key(
        "list_dir", {"depth": 1, "path": " . "}
    )
    assert call_key("list_dir", {"path": "."}) != call_key("read_file", {"path": "."})


def test_the_first_call_passes() -> None:
    assert LoopGuard().check("list_dir", {"path": "."}) is None


def test_the_second_identical_call_stops_the_stage() -> None:
    guard, _ = LoopGuard().record("list_dir", {"path": "."}, ok=True, result=["a"])
    stop = guard.check("list_dir", {"path": "."})
    assert stop is not None
    assert stop.rule == "repeat"
    assert stop.detail == 'list_dir({"path": "."}) was already called in this stage'


def test_different_arguments_are_not_a_repeat() -> None:
    guard, _ = LoopGuard().record("read_file", {"path": "a"}, ok=True, result="A")
    assert guard.check("read_file", {"path": "b"}) is None


def test_the_same_failure_twice_stops() -> None:
    guard, first = LoopGuard().record("read_file", {"path": "x"}, ok=False, result="no such file")
    assert first is None
    _, second = guard.record("read_file", {"path": "./x"}, ok=False, result="no such file")
    assert second is not None
    assert second.rule == "same_error"


def test_a_different_error_is_not_a_loop() -> None:
    guard, _ = LoopGuard().record("read_file", {"path": "x"}, ok=False, result="no such file")
    _, stop = guard.record("read_file", {"path": "y"}, ok=False, result="permission denied")
    assert stop is None


def test_ping_pong_between_two_tools_stops() -> None:
    guard = LoopGuard()
    stop = None
    for index in range(4):
        name = "list_dir" if index % 2 == 0 else "read_file"
        guard, stop = guard.record(name, {"page": index}, ok=True, result=f"same {name}")
    assert stop is not None
    assert stop.rule == "alternation"


def test_progress_between_two_tools_is_not_ping_pong() -> None:
    guard = LoopGuard()
    stop = None
    for index in range(4):
        name = "list_dir" if index % 2 == 0 else "read_file"
        guard, stop = guard.record(name, {"page": index}, ok=True, result=f"page {index}")
    assert stop is None
