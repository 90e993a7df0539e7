"""The registry: built-ins, modules, duplicates refused, close names suggested."""

from __future__ import annotations

import types
from typing import Any

import pytest

from loopengine import SkillContext, skill, tool
from loopengine.builtins import builtin_registry
from loopengine.contract import BuiltinAction, SourceType
from loopengine.errors import ContractError
from loopengine.skills import Registry


def _module(**members: Any) -> types.ModuleType:
    module = types.ModuleType("plugin_under_test")
    module.__dict__.update(members)
    return module


@skill("audit")
def audit(ctx: SkillContext) -> dict[str, Any]:
    return {}


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return term


def test_every_builtin_action_is_a_builtin_skill() -> None:
    registry = builtin_registry()
    assert registry.skill_names() >= set(BuiltinAction)
    assert all(d.builtin for d in registry.skills)


def test_every_source_type_is_read_by_a_builtin_skill() -> None:
    registry = builtin_registry()
    assert {kind.skill for kind in SourceType} <= registry.skill_names()


def test_add_module_registers_skills_and_tools() -> None:
    registry = Registry()
    assert registry.add_module(_module(audit=audit, lookup=lookup, other=len)) == 2
    assert registry.skill("audit").fn is audit
    assert registry.tool("lookup").fn is lookup


def test_registering_the_same_definition_twice_is_harmless() -> None:
    registry = Registry()
    registry.add_module(_module(audit=audit))
    registry.add_module(_module(audit=audit, again=audit))
    assert [d.name for d in registry.skills] == ["audit"]


def test_two_definitions_under_one_name_are_refused() -> None:
    @skill("audit")
    def another_audit(ctx: SkillContext) -> dict[str, Any]:
        return {}

    registry = Registry()
    registry.add_module(_module(audit=audit))
    with pytest.raises(ContractError, match="skill 'audit' is defined twice"):
        registry.add_module(_module(another_audit=another_audit))


def test_unknown_skill_suggests_the_close_name() -> None:
    registry = builtin_registry()
    with pytest.raises(ContractError, match="did you mean 'log_only'"):
        registry.skill("log_onyl")


def test_unknown_tool_is_an_error() -> None:
    with pytest.raises(ContractError, match="unknown tool 'x'"):
        Registry().tool("x")


def test_add_object_takes_functions_modules_and_lists() -> None:
    registry = Registry()
    assert registry.add_object([audit, _module(lookup=lookup)]) == 2


def test_add_object_refuses_other_things() -> None:
    with pytest.raises(ContractError, match="neither a module nor a @skill/@tool"):
        Registry().add_object(42)
