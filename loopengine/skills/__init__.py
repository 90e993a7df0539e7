"""Skills and tools: the ``@skill``/``@tool`` decorators, the registry and plugin loading."""

from loopengine.skills._context import ROLLBACK_SUFFIX, Progress, SkillContext, SkillOutput
from loopengine.skills._definition import ATTRIBUTE, SkillDef, ToolDef, skill, tool
from loopengine.skills._docstrings import parse_docstring
from loopengine.skills._plugins import load_entry_points, load_plugin, looks_like_file
from loopengine.skills._registry import Registry

__all__ = [
    "ATTRIBUTE",
    "ROLLBACK_SUFFIX",
    "Progress",
    "Registry",
    "SkillContext",
    "SkillDef",
    "SkillOutput",
    "ToolDef",
    "load_entry_points",
    "load_plugin",
    "looks_like_file",
    "parse_docstring",
    "skill",
    "tool",
]
