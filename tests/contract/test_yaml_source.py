"""Safe YAML with positions: no code, no bombs, keys as written, every error located."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from loopengine.contract import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    MAX_NUMBER,
    Position,
    parse_yaml,
)
from loopengine.errors import ContractError
from tests.conftest import SEED_LOOP

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _errors(text: str) -> list[str]:
    with pytest.raises(ContractError) as caught:
        parse_yaml(text, "f.yaml")
    return [d.format() for d in caught.value.diagnostics]


def test_positions_of_values_and_keys_are_one_based() -> None:
    document = parse_yaml("a:\n  b: [1, 2]\n", "f.yaml")
    assert document.locate(("a", "b", 1)) == Position(2, 10)
    assert document.locate(("a", "b"), at_key=True) == Position(2, 3)


def test_an_unknown_path_locates_its_nearest_parent() -> None:
    document = parse_yaml("a:\n  b: 1\n", "f.yaml")
    assert document.locate(("a", "missing", 3)) == Position(2, 3)


def test_within_keeps_positions_of_the_whole_file() -> None:
    document = parse_yaml("Loop:\n  id: x\n", "f.yaml").within("Loop")
    assert document.data == {"id": "x"}
    assert document.locate(("id",)) == Position(2, 7)


def test_the_billion_laughs_is_refused_before_it_expands() -> None:
    """Its 9**9 strings would take gigabytes: the parser stops at ``MAX_NODES`` (~16 MiB)."""
    assert len(BILLION_LAUGHS.encode()) < 432
    tracemalloc.start()
    try:
        errors = _errors(BILLION_LAUGHS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak:,} bytes to refuse it"
    assert "expands to more than" in errors[0]


def test_aliases_within_the_limit_expand() -> None:
    document = parse_yaml("a: &x [1, 2]\nb: *x\n", "f.yaml")
    assert document.data == {"a": [1, 2], "b": [1, 2]}
    assert MAX_NODES > 1000


def test_a_recursive_alias_is_refused() -> None:
    assert _errors("a: &x [*x]\n") == ["f.yaml:1:4: recursive alias"]


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system ['ls']",
        "!!python/name:os.system",
        "!!set {a}",
        "!custom value",
    ],
)
def test_tags_that_build_objects_are_refused(tagged: str) -> None:
    (error,) = _errors(f"a: {tagged}\n")
    assert "is not allowed: loop files hold plain data" in error


def test_keys_stay_as_written() -> None:
    assert parse_yaml("on: [done]\nyes: 1\n", "f.yaml").data == {"on": ["done"], "yes": 1}


def test_only_true_and_false_are_booleans() -> None:
    data = parse_yaml("a: yes\nb: off\nc: true\nd: False\n", "f.yaml").data
    assert data == {"a": "yes", "b": "off", "c": True, "d": False}


def test_timestamps_stay_text() -> None:
    assert parse_yaml("at: 2026-01-27\n", "f.yaml").data == {"at": "2026-01-27"}


def test_merge_keys_merge_without_overriding() -> None:
    data = parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n", "f.yaml").data
    assert data["c"] == {"x": 1, "y": 3}


def test_duplicate_keys_are_errors() -> None:
    assert _errors("a: 1\nb: 2\na: 3\n") == ["f.yaml:3:1: a: duplicate key 'a' (first at line 1)"]


def test_a_syntax_error_is_located() -> None:
    assert _errors("a: 1\n b: 2\n") == [
        "f.yaml:2:3: invalid YAML: mapping values are not allowed in this context"
    ]


def test_several_documents_are_refused() -> None:
    (error,) = _errors("a: 1\n---\nb: 2\n")
    assert error.startswith("f.yaml:2:1: a file holds one YAML document")


def test_a_key_must_be_a_scalar() -> None:
    (error,) = _errors("? [a, b]\n: 1\n")
    assert "a key must be a plain string" in error


def test_loading_many_documents_keeps_nothing_of_them() -> None:
    text = SEED_LOOP.read_text()
    parse_yaml(text, "f.yaml")
    tracemalloc.start()
    try:
        parse_yaml(text, "f.yaml")
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            parse_yaml(text, "f.yaml")
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # A constructor shared across documents kept ~37 KiB a file: 100 files would be ~3.7 MiB.
    assert grown < 64 * 1024, f"{grown:,} bytes retained by 100 documents"


def test_deep_flow_nesting_is_refused_before_libyaml_composes_it() -> None:
    assert _errors("[" * 30_000) == [
        f"f.yaml:1:{MAX_DEPTH + 1}: nested more than {MAX_DEPTH} levels deep: flatten the data"
    ]


def test_deep_block_nesting_is_refused_where_it_goes_too_deep() -> None:
    text = "".join(f"{'  ' * level}k{level}:\n" for level in range(MAX_DEPTH + 5)) + "  v: 1\n"
    (error,) = _errors(text)
    assert error.endswith(f"nested more than {MAX_DEPTH} levels deep: flatten the data")


def test_merge_keys_count_every_mapping_they_merge() -> None:
    levels = ["l0: &l0 {a: 1}"]
    for level in range(1, 10):
        sources = ", ".join([f"*l{level - 1}"] * 10)
        levels.append(f"l{level}: &l{level} {{<<: [{sources}]}}")
    text = "\n".join(levels) + "\n"
    assert len(text) < 700
    (error,) = _errors(text)
    assert f"expands to more than {MAX_NODES:,} values" in error


def test_an_oversized_file_is_refused_unread_with_the_limit() -> None:
    (error,) = _errors("a: " + "x" * MAX_BYTES + "\n")
    assert error == (
        f"f.yaml:1:1: the file is 2.0 MiB, over the {MAX_BYTES // 2**20} MiB a loop or config "
        "file may hold: move data out of it (params, sources, files)"
    )


def test_a_huge_number_is_refused_with_the_limit() -> None:
    assert _errors("a: " + "1" * 5000 + "\n") == [
        f"f.yaml:1:4: a: a number of 5000 characters: at most {MAX_NUMBER} "
        "(quote it to keep it as text)"
    ]


def test_base_60_is_text_as_in_yaml_1_2() -> None:
    assert parse_yaml("a: 1:30:00\n", "f.yaml").data == {"a": "1:30:00"}


def test_a_long_flat_list_is_counted_before_it_is_composed() -> None:
    (error,) = _errors("[" + ",".join(["1"] * (MAX_NODES + 10)) + "]\n")
    assert f"expands to more than {MAX_NODES:,} values" in error
