"""``loopengine skills`` / ``tools`` / ``schema``: what a loop can use, and the JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from loopengine.app import load_workspace
from loopengine.commands._console import Console
from loopengine.contract import SourceType

__all__ = ["run_schema", "run_skills", "run_tools"]


def _type_name(annotation: Any) -> str:
    if annotation is None:
        return "None"
    name = getattr(annotation, "__name__", None)
    return (
        name
        if name and not getattr(annotation, "__args__", None)
        else str(annotation).replace("typing.", "")
    )


def _params(model: type[BaseModel]) -> list[dict[str, Any]]:
    described = []
    for name, info in model.model_fields.items():
        entry: dict[str, Any] = {"name": info.alias or name, "type": _type_name(info.annotation)}
        if info.default is not PydanticUndefined:
            entry["default"] = info.default
        else:
            entry["required"] = True
        if info.description:
            entry["description"] = info.description
        described.append(entry)
    return described


def _signature(params: list[dict[str, Any]]) -> str:
    parts = []
    for param in params:
        text = f"{param['name']}: {param['type']}"
        if "default" in param:
            text += f" = {param['default']!r}"
        parts.append(text)
    return ", ".join(parts)


def run_skills(console: Console, config: Path | None, as_json: bool) -> int:
    registry = load_workspace(config).registry
    skills = [
        {
            "name": d.name,
            "builtin": d.builtin,
            "description": d.description,
            "params": _params(d.params),
            "origin": d.origin,
            "async": d.is_async,
        }
        for d in registry.skills
    ]
    source_types = {kind.value: registry.skill(kind.skill).description for kind in SourceType}
    if as_json:
        console.json({"skills": skills, "source_types": source_types})
        return 0
    console.print(console.style("Skills", "bold"))
    width = max(len(d.name) for d in registry.skills)
    for definition in registry.skills:
        kind = "built-in" if definition.builtin else "plugin  "
        name = console.style(definition.name.ljust(width), "cyan")
        console.print(f"  {name}  {console.style(kind, 'dim')}  {definition.description}")
        signature = f"({_signature(_params(definition.params))})"
        console.print(f"  {' ' * width}  {console.style(signature, 'dim')}")
    console.print()
    console.print(console.style("Detect source types (detect.sources[].type)", "bold"))
    rows = [(f"  {name}", text) for name, text in source_types.items()]
    console.table(rows, (("cyan",), ()))
    return 0


def run_tools(console: Console, config: Path | None, as_json: bool) -> int:
    from loopengine.builtins import offered_tools

    workspace = load_workspace(config)
    settings = workspace.settings
    offered = offered_tools(settings.config, settings.base, workspace.registry, settings.private)
    tools = [
        {
            "name": d.name,
            "description": d.description,
            "parameters": d.json_schema(),
            "origin": d.origin,
        }
        for d in offered
    ]
    if as_json:
        console.json({"tools": tools})
        return 0
    rows = [(d.name, f"({_signature(_params(d.params))})", d.description) for d in offered]
    console.table(rows, (("cyan",), (), ()))
    return 0


def run_schema(console: Console, which: str) -> int:
    from loopengine.contract import config_schema, loop_schema

    console.json(loop_schema() if which == "loop" else config_schema())
    return 0
