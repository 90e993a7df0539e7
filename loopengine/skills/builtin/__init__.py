"""Built-in skills and the catalog of detect source types."""

from loopengine.skills.builtin import actions, llm
from loopengine.skills.builtin.actions import ACTION_NAMES
from loopengine.skills.builtin.sources import SOURCE_TYPES

__all__ = ["ACTION_NAMES", "MODULES", "SOURCE_TYPES"]

MODULES = (actions, llm)
