"""The depth of a YAML text, read from its characters: what nests counts, what is text does not."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from loopengine.contract import MAX_DEPTH, parse_yaml
from loopengine.contract._yaml_depth import too_deep

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SCALARS = ["a", "it's", "[x", "#no", "a: b", "- x", "'q'", '"d"', "x, y", "{z}", "", "|", "> x"]


def _events_depth(text: str) -> int:
    """How deep libyaml's events nest: what ``too_deep`` reads from the characters."""
    depth = deepest = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            depth += 1
            deepest = max(deepest, depth)
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            depth -= 1
    return deepest


def _data(rng: random.Random, levels: int) -> Any:
    if levels <= 0 or rng.random() < 0.3:
        return rng.choice(_SCALARS) + rng.choice(["", "\nline [[", " # [{"])
    if rng.random() < 0.5:
        return [_data(rng, levels - 1) for _ in range(rng.randint(0, 3))]
    keys = ["k", "a b", "[k]", "'k'", "k#", "-k", "?k"]
    return {rng.choice(keys) + str(i): _data(rng, levels - 1) for i in range(rng.randint(0, 3))}


def _documents(count: int) -> list[str]:
    rng = random.Random(20)
    return [
        yaml.dump(
            _data(rng, rng.randint(1, 8)),
            default_flow_style=rng.choice([None, True, False]),
            default_style=rng.choice([None, "'", '"', "|"]),
            width=rng.choice([20, 80]),
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("text", _documents(300))
def test_the_depth_read_from_the_text_is_the_depth_of_its_events(text: str) -> None:
    depth = _events_depth(text)
    assert too_deep(text, depth) is None
    assert depth == 0 or too_deep(text, depth - 1) is not None


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("a:\n- x\n- y\nb: 1\n", 2),
        ("- - - a\n", 3),
        ("- a: b\n  c: [1, {d: e}]\n", 4),
        ("? - x\n  - y\n: z\n", 2),
        ("&a a: *a\n", 1),
        ("a: !!seq [1, [2]]\n", 3),
        ("--- [[1]]\n", 2),
        ("- [a,\n  [b, # c ]\n   'c]'],\n  d]\n", 3),
        ("[it's, [x]]\n", 2),
        ('{"a":[1]}\n', 2),
        ("a:\r  - [x]\r", 3),
        ("a:\r\n  - [x]\r\n", 3),
        ("a:\u2028  - [x]\u2028", 3),
    ],
)
def test_compact_forms_anchors_tags_and_multi_line_flows_nest_as_they_compose(
    text: str, depth: int
) -> None:
    assert (_events_depth(text), too_deep(text, depth)) == (depth, None)
    assert too_deep(text, depth - 1) is not None


@pytest.mark.parametrize(
    "text",
    [
        "a: '" + "[" * 2000 + "'\n",
        'a: "' + "{" * 1000 + '\\"\n  ' + "[" * 1000 + '"\n',
        "a: |\n  " + "[" * 2000 + "\n  " + "- " * 2000 + "x\n",
        "a: b\n  " + "[" * 2000 + "\n",
        "a: 1 # " + "[" * 2000 + "\n",
        "a: >\n" + "".join(f"  {' ' * n}- k{n}:\n" for n in range(300)),
    ],
    ids=["single-quoted", "double-quoted", "block scalar", "plain", "comment", "indented text"],
)
def test_brackets_and_indentation_inside_text_do_not_nest(text: str) -> None:
    assert too_deep(text, MAX_DEPTH) is None
    assert parse_yaml(text, "f.yaml").data["a"]


def test_deep_block_nesting_is_refused_at_the_key_that_goes_too_deep_whatever_libyaml_allows() -> (
    None
):
    text = "".join(f"{' ' * n}k{n}:\n" for n in range(2000)) + " " * 2000 + "v: 1\n"
    with pytest.raises(Exception, match="nested more than") as caught:
        parse_yaml(text, "f.yaml")
    assert str(caught.value) == (
        f"f.yaml:{MAX_DEPTH + 1}:{MAX_DEPTH + 1}: nested more than {MAX_DEPTH} levels deep: "
        "flatten the data"
    )


def test_a_flow_pair_is_a_mapping_the_text_does_not_count_but_composing_still_refuses() -> None:
    text = "[a: " * (MAX_DEPTH // 2 + 1) + "x" + "]" * (MAX_DEPTH // 2 + 1) + "\n"
    assert too_deep(text, MAX_DEPTH) is None
    with pytest.raises(Exception, match=f"nested more than {MAX_DEPTH} levels deep"):
        parse_yaml(text, "f.yaml")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r", "\x85", "\u2028"])
def test_any_line_break_of_yaml_starts_a_line(newline: str) -> None:
    text = newline.join(f"{' ' * n}k{n}:" for n in range(40)) + newline
    assert _events_depth(text) == 40
    assert too_deep(text, 30) == (31, 31)
