"""Event patterns: ``*`` is one segment, ``**`` any depth; anchored and case-sensitive. An
event's data: nested at most ``MAX_EVENT_DEPTH`` levels, at most ``MAX_EVENT_BYTES`` as compact
JSON, JSON only."""

from __future__ import annotations

from typing import Any

import pytest

from loopengine.triggers import (
    MAX_EVENT_BYTES,
    MAX_EVENT_DEPTH,
    EventDataProblem,
    event_data_problem,
    matches,
    pattern_problem,
    stream_entry_event,
)


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("seo.page.updated", "seo.page.updated", True),
        ("seo.*", "seo.page", True),
        ("seo.*", "seo.page.updated", False),
        ("seo.*", "seo", False),
        ("seo.**", "seo", True),
        ("seo.**", "seo.page.updated", True),
        ("**.done", "seo.audit.done", True),
        ("**.done", "done", True),
        ("a.**.z", "a.z", True),
        ("a.**.z", "a.b.c.z", True),
        ("a.**.z", "a.b.c", False),
        ("seo.page", "SEO.page", False),
        ("seo.page", "seo.page.x", False),
        ("a.*.c", "a..c", False),
        ("**", "any.thing.at.all", True),
    ],
)
def test_matching(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


@pytest.mark.parametrize("pattern", ["seo.page", "seo.*", "**.done", "cluster-1.node_2.*"])
def test_valid_patterns(pattern: str) -> None:
    assert pattern_problem(pattern) is None


@pytest.mark.parametrize("pattern", ["seo.*page", "seo..page", "seo page", "seo.***"])
def test_invalid_patterns(pattern: str) -> None:
    assert "invalid event pattern" in (pattern_problem(pattern) or "")


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _string_of(size: int, character: str = "x") -> str:
    """A string whose compact JSON in UTF-8 is ``size`` bytes (its quotes included)."""
    return character * ((size - 2) // len(character.encode()))


@pytest.mark.parametrize(
    "data",
    [
        None,
        {},
        _nested(MAX_EVENT_DEPTH),
        _string_of(MAX_EVENT_BYTES),
        {"page": 3, "tags": ["a", "b"], "ok": True, "ratio": 0.5},
    ],
)
def test_data_within_the_bounds_is_taken(data: Any) -> None:
    assert event_data_problem(data) is None


def test_data_nested_one_level_too_deep_is_refused_saying_how_to_fix_it() -> None:
    assert event_data_problem(_nested(MAX_EVENT_DEPTH + 1)) == EventDataProblem(
        "data is nested more than 32 levels: flatten it"
    )


def test_data_nested_past_the_recursion_limit_is_refused_without_recursing() -> None:
    problem = event_data_problem({"x": _nested(100_000)})
    assert problem == EventDataProblem.too_deep("data")


def test_data_that_holds_itself_is_refused_as_too_deep() -> None:
    looped: list[Any] = []
    looped.append(looped)
    assert event_data_problem(looped) == EventDataProblem.too_deep("data")


def test_data_one_byte_over_as_json_is_refused_as_too_large() -> None:
    problem = event_data_problem(_string_of(MAX_EVENT_BYTES + 1))
    assert problem == EventDataProblem(
        "data is over 65536 bytes as JSON: send a reference to it instead", too_large=True
    )


def test_the_size_is_counted_in_utf8_bytes_of_compact_json() -> None:
    """Escaped as ASCII, the first would be three times over the bound; spaced, the second."""
    assert event_data_problem(_string_of(MAX_EVENT_BYTES, "é")) is None
    assert event_data_problem({"x": [1] * 30_000}) is None


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"x": float("nan")}, "data is not JSON: Out of range float values"),
        ({"x": {1, 2}}, "data is not JSON: Object of type set"),
        ({"x": "\ud800"}, "data is not JSON: 'utf-8' codec can't encode"),
    ],
)
def test_data_that_is_not_json_is_refused(data: Any, said: str) -> None:
    problem = event_data_problem(data)
    assert problem is not None
    assert problem.message.startswith(said)
    assert not problem.too_large


def test_the_data_is_named_as_the_caller_names_it() -> None:
    problem = event_data_problem(_nested(40), named="--data")
    assert problem is not None
    assert problem.message.startswith("--data is nested more than")


def test_a_pattern_of_many_double_stars_is_matched_in_one_pass() -> None:
    pattern, name = "**." * 66 + "x", ".".join(["a"] * 100)
    assert pattern_problem(pattern) is None
    assert matches(pattern, name) is False
    assert matches(pattern, name + ".x") is True


def test_a_stream_entry_carries_its_name_and_json_data() -> None:
    fields = {b"name": b"order.paid", b"data": b'{"order": 7}', b"other": b"x"}
    assert stream_entry_event(fields) == ("order.paid", {"order": 7})


def test_a_stream_entry_without_data_carries_an_empty_object() -> None:
    assert stream_entry_event({b"name": b"order.paid"}) == ("order.paid", {})


def test_spaced_out_data_within_the_bound_as_compact_json_is_taken() -> None:
    spaced = "[" + ", ".join(["1"] * 30_000) + "]"
    assert stream_entry_event({b"name": b"a", b"data": spaced.encode()}) == ("a", [1] * 30_000)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (None, "the entry is empty or was deleted"),
        ({b"data": b"{}"}, "field 'name': event name ''"),
        ({b"name": b"a b"}, "field 'name': event name 'a b'"),
        ({b"name": b"\xff"}, "its fields are not UTF-8"),
        ({b"name": b"a", b"data": b"{"}, "field 'data' is not JSON: "),
        ({b"name": b"a", b"data": b"NaN"}, "field 'data' is not JSON: "),
        ({b"name": b"a", b"data": b"[" * 200_000}, "field 'data' is not JSON: "),
        ({b"name": b"a", b"data": b" " * (4 * MAX_EVENT_BYTES + 1)}, "field 'data' is over "),
        ({b"name": b"a", b"data": b"[" * 40 + b"]" * 40}, "field 'data' is nested more than"),
        (
            {b"name": b"a", b"data": b'"' + b"x" * MAX_EVENT_BYTES + b'"'},
            "field 'data' is over 65536 bytes as JSON",
        ),
    ],
)
def test_a_bad_stream_entry_says_why_in_one_line(
    fields: dict[bytes, bytes] | None, problem: str
) -> None:
    said = stream_entry_event(fields)
    assert isinstance(said, str)
    assert said.startswith(problem)
    assert "\n" not in said
