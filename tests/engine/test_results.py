"""How much of what an action returned is kept: all of it up to 16 KiB as JSON, else its start
and a marker; never an error, whatever the value."""

from __future__ import annotations

import json
from typing import Any

from loopengine.engine._results import MAX_RESULT_BYTES, kept


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def test_a_result_within_the_bound_is_kept_as_it_is() -> None:
    value = {"pages": list(range(100))}
    assert kept(value) is value


def test_text_of_many_byte_characters_is_cut_whole_within_the_bound() -> None:
    cut = kept({"text": 'é"\\\x01' * 20_000})
    assert isinstance(cut, str)
    assert "\ufffd" not in cut
    assert _size(cut) <= MAX_RESULT_BYTES
    assert cut.endswith("kept]")


def test_a_circular_value_is_a_marker_not_an_error() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    assert kept(looped) == "[not kept: the result cannot be written as JSON (ValueError)]"


def test_a_value_nested_past_the_recursion_limit_is_a_marker_not_an_error() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    assert kept(deep) == "[not kept: the result cannot be written as JSON (RecursionError)]"
