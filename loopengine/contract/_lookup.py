"""How validation sees skills: a small lookup the skills registry satisfies.

The contract layer sits below ``skills``; it checks a loop's skill names and params through this
protocol instead of importing the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from loopengine._diagnostics import Path

__all__ = ["ParamProblem", "SkillInfo", "SkillLookup"]


@dataclass(frozen=True, slots=True)
class ParamProblem:
    """A param that does not fit a skill: its key path inside ``params`` and what is wrong."""

    path: Path
    message: str


class SkillInfo(Protocol):
    """What validation needs to know of one skill."""

    @property
    def name(self) -> str: ...

    @property
    def param_names(self) -> frozenset[str]: ...

    @property
    def accepts_any_param(self) -> bool: ...

    def check_params(
        self, params: Mapping[str, Any], dynamic: frozenset[str]
    ) -> list[ParamProblem]: ...


class SkillLookup(Protocol):
    """The skills a loop may name."""

    def find_skill(self, name: str) -> SkillInfo | None: ...

    def skill_names(self) -> frozenset[str]: ...
