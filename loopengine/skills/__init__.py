"""Skills and tools: the ``@skill``/``@tool`` decorators, the registry and plugin loading."""

from loopengine.skills.context import SkillContext, SkillOutput
from loopengine.skills.definition import SkillDef, ToolDef, skill, tool
from loopengine.skills.registry import Registry

__all__ = ["Registry", "SkillContext", "SkillDef", "SkillOutput", "ToolDef", "skill", "tool"]
