"""The checked-in JSON Schemas match the models and are useful to editors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from loopengine.contract import (
    _generated,
    _schema,
    config_schema,
    config_validator,
    loop_schema,
    loop_validator,
)
from tests.conftest import ROOT, SEED_DIR, SEED_LOOP

SCHEMAS = ROOT / "schemas"
REGENERATE = "regenerate with: loopengine schema {0} > schemas/{0}.schema.json"


@pytest.mark.parametrize(("name", "generate"), [("loop", loop_schema), ("config", config_schema)])
def test_checked_in_schema_matches_the_models(name: str, generate: Any) -> None:
    checked_in = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert checked_in == generate(), REGENERATE.format(name)


@pytest.mark.parametrize("name", ["loop", "config"])
def test_validation_reads_the_shipped_schema_without_generating_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def generate() -> None:
        raise AssertionError("generated from the models")

    monkeypatch.setattr(_generated, "loop_schema", generate)
    monkeypatch.setattr(_generated, "config_schema", generate)
    shipped = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert _schema.shipped_schema.__wrapped__(name) == shipped


def test_the_validators_use_the_shipped_definitions() -> None:
    assert loop_validator().schema["$defs"] == _schema.shipped_schema("loop")["$defs"]
    assert config_validator().schema["$defs"] == _schema.shipped_schema("config")["$defs"]


@pytest.mark.parametrize(("name", "generate"), [("loop", loop_schema), ("config", config_schema)])
def test_without_shipped_schemas_they_are_generated(
    name: str, generate: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_schema, "shipped_dir", lambda folder: tmp_path / folder)
    assert _schema.shipped_schema.__wrapped__(name) == generate()


@pytest.mark.parametrize("name", ["loop", "config"])
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def test_seed_validates_against_the_schema_as_an_editor_would() -> None:
    assert list(_validator("loop").iter_errors(yaml.safe_load(SEED_LOOP.read_text()))) == []


def test_a_bare_loop_validates_against_the_schema() -> None:
    bare = yaml.safe_load(SEED_LOOP.read_text())["Loop"]
    assert list(_validator("loop").iter_errors(bare)) == []


def test_the_schema_rejects_unknown_keys_under_loop() -> None:
    document = {"Loop": {"id": "x", "trigger": {"type": "manual"}, "detcet": {}}}
    assert any("detcet" in e.message for e in _validator("loop").iter_errors(document))


def test_the_example_config_validates() -> None:
    config = yaml.safe_load((SEED_DIR / "loopengine.yaml").read_text())
    assert list(_validator("config").iter_errors(config)) == []


def _properties(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (definition, name, prop)
        for definition, body in schema["$defs"].items()
        for name, prop in body.get("properties", {}).items()
    ]


@pytest.mark.parametrize("generate", [loop_schema, config_schema])
def test_every_definition_has_a_description_for_hover_help(generate: Any) -> None:
    assert [name for name, body in generate()["$defs"].items() if not body.get("description")] == []


def test_optional_keys_are_never_null_for_authors() -> None:
    text = json.dumps(loop_schema())
    assert '"type": "null"' not in text


def test_schema_documents_the_phases() -> None:
    definitions = loop_schema()["$defs"]
    properties = definitions["LoopSpec"]["properties"]
    for phase in ["detect", "analyze", "decide", "act", "validate", "learn", "store"]:
        target = definitions[properties[phase]["$ref"].rsplit("/", 1)[1]]
        described = properties[phase].get("description") or target["description"]
        assert described.startswith("Phase"), phase


def _undescribed(node: Any, where: str = "#") -> Iterator[str]:
    """Where a key of ``node`` (a schema) has no description of its own."""
    if isinstance(node, list):
        for index, child in enumerate(node):
            yield from _undescribed(child, f"{where}/{index}")
    elif isinstance(node, dict):
        for key, prop in node.get("properties", {}).items():
            if not prop.get("description"):
                yield f"{where}/properties/{key}"
        for key, child in node.items():
            yield from _undescribed(child, f"{where}/{key}")


@pytest.mark.parametrize("name", ["loop", "config"])
def test_every_key_has_a_description_for_hover_help(name: str) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert list(_undescribed(schema)) == []


def test_modeline_in_example_config_points_at_the_schema() -> None:
    first_line = (SEED_DIR / "loopengine.yaml").read_text().splitlines()[0]
    target = first_line.split("$schema=", 1)[1]
    assert (SEED_DIR / target).resolve() == (SCHEMAS / "config.schema.json").resolve()
    assert Path(target).name == "config.schema.json"
