"""The registry of skills and tools a loop may use; duplicates are refused by name."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from loopengine._suggestions import hint
from loopengine.errors import ContractError
from loopengine.skills._definition import ATTRIBUTE, Definition, SkillDef, ToolDef

__all__ = ["Registry"]


class Registry:
    """Skills and tools by name (``loopengine.builtins.builtin_registry()`` starts with the
    built-in ones)."""

    def __init__(self) -> None:
        self._skills: dict[str, SkillDef] = {}
        self._tools: dict[str, ToolDef] = {}

    def add(self, definition: Definition) -> None:
        """Register one definition; another definition under the same name is an error."""
        table: dict[str, Any] = self._skills if isinstance(definition, SkillDef) else self._tools
        kind = "skill" if isinstance(definition, SkillDef) else "tool"
        existing = table.get(definition.name)
        if existing is not None and existing.origin != definition.origin:
            raise ContractError(
                f"{kind} '{definition.name}' is defined twice: by {existing.origin} and by "
                f"{definition.origin}; rename one of them"
            )
        table[definition.name] = definition

    def add_module(self, module: ModuleType) -> int:
        """Register every decorated function found in ``module``; returns how many."""
        found = [
            value
            for value in vars(module).values()
            if isinstance(getattr(value, ATTRIBUTE, None), Definition)
        ]
        for value in found:
            self.add(getattr(value, ATTRIBUTE))
        return len(found)

    def add_object(self, value: Any) -> int:
        """Register a module, a decorated function, or an iterable of either."""
        if isinstance(value, ModuleType):
            return self.add_module(value)
        definition = getattr(value, ATTRIBUTE, None)
        if isinstance(definition, Definition):
            self.add(definition)
            return 1
        if isinstance(value, Iterable) and not isinstance(value, str | bytes):
            return sum(self.add_object(item) for item in value)
        raise ContractError(f"{value!r} is neither a module nor a @skill/@tool function")

    def skill(self, name: str) -> SkillDef:
        """The skill called ``name``; the error lists the close names."""
        found = self._skills.get(name)
        if found is None:
            raise ContractError(f"unknown skill '{name}'; {hint(name, self._skills)}")
        return found

    def find_skill(self, name: str) -> SkillDef | None:
        return self._skills.get(name)

    def tool(self, name: str) -> ToolDef:
        found = self._tools.get(name)
        if found is None:
            raise ContractError(f"unknown tool '{name}'; {hint(name, self._tools)}")
        return found

    @property
    def skills(self) -> list[SkillDef]:
        return sorted(self._skills.values(), key=lambda definition: definition.name)

    @property
    def tools(self) -> list[ToolDef]:
        return sorted(self._tools.values(), key=lambda definition: definition.name)

    def skill_names(self) -> frozenset[str]:
        return frozenset(self._skills)
