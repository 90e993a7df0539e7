"""@skill and @tool: definitions built from signatures and docstrings."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from loopengine import SkillContext, skill, tool
from loopengine.errors import ContractError
from loopengine.skills import ATTRIBUTE, SkillDef, ToolDef


def _definition(fn: Any) -> Any:
    return getattr(fn, ATTRIBUTE)


def test_skill_named_by_the_decorator() -> None:
    @skill("seo_role_audit")
    async def audit(ctx: SkillContext, check_content: bool = True) -> dict[str, Any]:
        return {}

    definition = _definition(audit)
    assert isinstance(definition, SkillDef)
    assert (definition.name, definition.is_async, definition.param_names) == (
        "seo_role_audit",
        True,
        {"check_content"},
    )


def test_bare_decorator_uses_the_function_name() -> None:
    @skill
    def canonical_check(ctx: SkillContext) -> dict[str, Any]:
        """Check canonicals."""
        return {}

    definition = _definition(canonical_check)
    assert (definition.name, definition.is_async, definition.description) == (
        "canonical_check",
        False,
        "Check canonicals.",
    )


def test_decorated_function_is_still_callable() -> None:
    @skill("plain")
    def plain(ctx: SkillContext, n: int = 1) -> int:
        return n + 1

    assert plain(None, n=2) == 3  # type: ignore[arg-type]


def test_params_are_validated_from_the_signature() -> None:
    @skill("typed")
    def typed(ctx: SkillContext, target: str, limit: int = 10) -> None: ...

    problems = _definition(typed).check_params({"limit": "x", "extra": 1}, frozenset())
    assert sorted(p.path for p in problems) == [("extra",), ("limit",), ("target",)]


def test_dynamic_params_are_checked_only_to_exist() -> None:
    @skill("typed")
    def typed(ctx: SkillContext, limit: int = 10) -> None: ...

    definition = _definition(typed)
    assert definition.check_params({"limit": "${ input.n }"}, frozenset({"limit"})) == []
    assert len(definition.check_params({"limt": "${ input.n }"}, frozenset({"limt"}))) == 1


class Params(BaseModel):
    title: str


def test_a_pydantic_model_can_hold_the_params() -> None:
    @skill("modelled")
    def modelled(ctx: SkillContext, params: Params) -> None: ...

    definition = _definition(modelled)
    assert definition.takes_model
    assert definition.param_names == {"title"}


def test_keyword_arguments_accept_any_param() -> None:
    @skill("loose")
    def loose(ctx: SkillContext, **params: Any) -> None: ...

    assert _definition(loose).accepts_any_param
    assert _definition(loose).check_params({"anything": 1}, frozenset()) == []


def test_a_skill_must_take_the_context() -> None:
    with pytest.raises(ContractError, match="SkillContext as first argument"):

        @skill("nothing")
        def nothing() -> None: ...


def test_positional_only_params_are_refused() -> None:
    with pytest.raises(ContractError, match="keyword-compatible"):

        @skill("positional")
        def positional(ctx: SkillContext, value: int, /) -> None: ...


def test_tool_schema_comes_from_hints_and_docstring() -> None:
    @tool
    def create_note(title: str, notebook_id: str, pinned: bool = False) -> dict[str, Any]:
        """Create a note in a notebook.

        Args:
            title: Title of the note.
            notebook_id: Notebook that receives it.
        """
        return {}

    definition = _definition(create_note)
    assert isinstance(definition, ToolDef)
    assert definition.description == "Create a note in a notebook."
    schema = definition.json_schema()
    assert schema["required"] == ["title", "notebook_id"]
    assert schema["properties"]["title"] == {
        "description": "Title of the note.",
        "title": "Title",
        "type": "string",
    }
    assert schema["properties"]["pinned"]["default"] is False


def test_tool_with_a_name_and_description() -> None:
    @tool("notes.create", description="Make a note.")
    async def create(title: str) -> None: ...

    definition = _definition(create)
    assert (definition.name, definition.description, definition.is_async) == (
        "notes.create",
        "Make a note.",
        True,
    )


def test_unresolvable_type_hints_are_a_clear_error() -> None:
    with pytest.raises(ContractError, match="cannot resolve the type hints"):

        @skill("broken_hints")
        def broken(ctx: SkillContext, value: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821
