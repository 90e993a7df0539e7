"""The compiled schema test gives jsonschema's verdict, so valid files skip the slow pass safely."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loopengine.contract import (
    SchemaValidator,
    compile_schema,
    config_validator,
    loop_validator,
    parse_yaml,
)
from loopengine.errors import ContractError
from tests.conftest import ROOT

EXAMPLES = [
    p
    for p in ROOT.glob("examples/*/*.yaml")
    if p.name != "loopengine.yaml" and p.parent.name != "mistakes"
]
SHIPPED = sorted([*EXAMPLES, *ROOT.glob("loops/*.yaml")])
INVALID = sorted((Path(__file__).parent / "invalid").glob("*.yaml"))
REPLACEMENTS: list[Any] = [
    None, True, False, 0, -1, 3, 2.5, 4.0, "", "x", "5m", "Bad-Id", "seo_audit", "completed",
    "manual", "cron", "threshold", "phase", "skip", "metric", [], ["x"], [{}], {}, {"a": 1},
    {"type": "manual"}, {"type": "cron", "config": {"expression": "* * * * *"}},
]  # fmt: skip


def _body(path: Path) -> dict[str, Any] | None:
    try:
        data = parse_yaml(path.read_text(), str(path)).data
    except ContractError:
        return None
    data = data.get("Loop", data) if isinstance(data, dict) else data
    return data if isinstance(data, dict) else None


def _agree(validator: SchemaValidator, data: Any) -> None:
    expected = not list(validator.jsonschema.iter_errors(data))
    assert validator.accepts(data) == expected, data


def _paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        yield from _paths(value, (*path, key))


def _mutants(data: dict[str, Any], count: int, rng: random.Random) -> Iterator[Any]:
    """Copies of ``data`` with one to three values replaced, removed or added at random paths."""
    paths = list(_paths(data))[1:]
    for _ in range(count):
        mutant = copy.deepcopy(data)
        for path in rng.sample(paths, min(len(paths), rng.choice([1, 1, 2, 3]))):
            parent = mutant
            try:
                for part in path[:-1]:
                    parent = parent[part]
                if isinstance(parent, dict) and rng.random() < 0.25:
                    del parent[path[-1]]
                elif isinstance(parent, dict) and rng.random() < 0.3:
                    parent[f"extra_{rng.randint(0, 9)}"] = rng.choice(REPLACEMENTS)
                else:
                    parent[path[-1]] = copy.deepcopy(rng.choice(REPLACEMENTS))
            except (KeyError, IndexError, TypeError):
                continue  # an earlier change removed or replaced this path's parent
        yield mutant


@pytest.mark.parametrize(
    "path", [p for p in SHIPPED + INVALID if _body(p) is not None], ids=lambda p: p.stem
)
def test_loop_files_and_their_mutants_get_the_verdict_of_jsonschema(path: Path) -> None:
    data = _body(path)
    assert data is not None
    validator = loop_validator()
    _agree(validator, data)
    for mutant in _mutants(data, 40, random.Random(path.name)):
        _agree(validator, mutant)


@pytest.mark.parametrize("path", sorted(ROOT.glob("examples/*/loopengine.yaml")), ids=str)
def test_configs_and_their_mutants_get_the_verdict_of_jsonschema(path: Path) -> None:
    data = parse_yaml(path.read_text(), str(path)).data
    validator = config_validator()
    _agree(validator, data)
    for mutant in _mutants(data, 40, random.Random(path.name)):
        _agree(validator, mutant)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_loops_pass_without_jsonschema(path: Path) -> None:
    assert loop_validator().accepts(_body(path))


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "integer"}, 4.0),
        ({"type": "integer"}, True),
        ({"type": "number"}, False),
        ({"type": ["string", "null"]}, None),
        ({"minimum": 0}, "not a number"),
        ({"exclusiveMaximum": 1}, 1),
        ({"pattern": "^a"}, "ba"),
        ({"minLength": 1}, ""),
        ({"maxLength": 3}, "abc"),
        ({"maxLength": 3}, "abcd"),
        ({"minItems": 1}, []),
        ({"maxItems": 1}, [1]),
        ({"maxItems": 1}, [1, 2]),
        ({"enum": ["a", "b"]}, "b"),
        ({"const": "a"}, ["a"]),
        ({"required": ["a"]}, {"b": 1}),
        ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x"}),
        ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"b": "x"}),
        ({"additionalProperties": {"type": "integer"}}, {"a": 1, "b": "2"}),
        ({"items": {"type": "integer"}}, [1, 2, "3"]),
        ({"anyOf": [{"type": "integer"}, {"minimum": 2}]}, 1.5),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 3),
        ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, 3),
        ({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": False}, {"a": 1}),
        ({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}, [[[], [1]]]),
    ],
)
def test_each_keyword_gives_the_verdict_of_jsonschema(
    schema: dict[str, Any], instance: Any
) -> None:
    assert compile_schema(schema)(instance) == Draft202012Validator(schema).is_valid(instance)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "string", "format": "email"}, "a@b.c"),
        ({"enum": [1, 2]}, 1),
        ({"$ref": "https://example.com/other.json"}, 1),
        ({"uniqueItems": True}, [1]),
    ],
)
def test_what_it_cannot_check_is_refused_for_jsonschema_to_judge(
    schema: dict[str, Any], instance: Any
) -> None:
    assert not compile_schema(schema)(instance)
