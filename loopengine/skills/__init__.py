"""Skills and tools: the ``@skill``/``@tool`` decorators, the registry and plugin loading."""

from loopengine.skills._context import SkillContext, SkillOutput
from loopengine.skills._definition import SkillDef, ToolDef, skill, tool
from loopengine.skills._registry import Registry

__all__ = ["Registry", "SkillContext", "SkillDef", "SkillOutput", "ToolDef", "skill", "tool"]
