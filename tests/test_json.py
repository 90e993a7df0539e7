"""JSON from outside holds finite numbers: NaN, Infinity and numbers past a float's range are
refused where they enter, naming where they stand. JSON written is compact, whatever it holds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import pytest

from loopengine._json import NonFiniteNumber, dumps, loads


@pytest.mark.parametrize(
    ("text", "where", "token"),
    [
        ('{"a": [1, {"b": NaN}]}', "body.a.1.b", "NaN"),
        ('{"x": Infinity}', "body.x", "Infinity"),
        ('{"x": -Infinity}', "body.x", "-Infinity"),
        ("[1, 2, 1e999]", "body.2", "1e999"),
        ("-2.5e400", "body", "-2.5e400"),
    ],
)
def test_a_number_no_float_holds_is_refused_naming_where(text: str, where: str, token: str) -> None:
    with pytest.raises(NonFiniteNumber) as refused:
        loads(text, root="body")
    assert (refused.value.where, refused.value.text) == (where, token)
    assert str(refused.value).startswith(f"{where}: {token} is not a finite number")


def test_the_first_in_document_order_is_named() -> None:
    with pytest.raises(NonFiniteNumber, match=r"^a\.0: NaN"):
        loads('{"a": [NaN, Infinity], "b": NaN}')


def test_a_document_nested_deep_is_walked_without_recursion() -> None:
    with pytest.raises(NonFiniteNumber, match=r"^(0\.){900}0: NaN"):
        loads("[" * 901 + "NaN" + "]" * 901)


def test_a_key_given_twice_is_refused_even_when_the_last_value_is_finite() -> None:
    with pytest.raises(NonFiniteNumber, match=r"^body: NaN"):
        loads('{"a": NaN, "a": 1}', root="body")


def test_finite_numbers_and_the_largest_floats_are_read() -> None:
    assert loads('{"a": 1.5, "b": -1.7976931348623157e308, "c": 10}') == {
        "a": 1.5,
        "b": -1.7976931348623157e308,
        "c": 10,
    }


def test_text_that_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Expecting value"):
        loads("not json")


@dataclass
class _Point:
    x: int


class _Pair(NamedTuple):
    a: int
    b: int


class _Ratio(float):
    pass


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": [1, 2.5, None, True], "é": "ü"}, '{"a":[1,2.5,null,true],"é":"ü"}'),
        ({1: "a", None: "b", 2.5: "c"}, '{"1":"a","null":"b","2.5":"c"}'),
        ([_Point(1), datetime(2026, 1, 2)], '["_Point(x=1)","2026-01-02 00:00:00"]'),
        ([_Pair(1, 2), _Ratio(0.5), math.nan, math.inf], "[[1,2],0.5,null,null]"),
        ({"n": 2**70, "é": "ü"}, '{"n":1180591620717411303424,"é":"ü"}'),
        ({"s": "\udc80"}, '{"s":"\\udc80"}'),
    ],
    ids=["plain", "keys", "unknown", "subclasses-and-non-finite", "past-64-bits", "lone-surrogate"],
)
def test_dumps_writes_compact_json_with_unknown_values_as_their_text(
    value: object, text: str
) -> None:
    assert dumps(value) == text


def test_dumps_writes_nesting_past_orjson_s_limit() -> None:
    deep: list[object] = []
    for _ in range(300):
        deep = [deep]
    assert dumps(deep) == "[" * 301 + "]" * 301
