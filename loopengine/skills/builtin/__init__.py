"""Built-in skills and the catalog of detect source types.

The skill modules load on demand (``builtin_modules``): the LLM skills import the contract,
which needs ``ACTION_NAMES`` from here, so importing them eagerly would be circular.
"""

from types import ModuleType

from loopengine.skills.builtin._actions import ACTION_NAMES
from loopengine.skills.builtin._sources import SOURCE_TYPES

__all__ = ["ACTION_NAMES", "SOURCE_TYPES", "builtin_modules"]


def builtin_modules() -> tuple[ModuleType, ...]:
    """The modules whose ``@skill`` functions every registry starts with."""
    from loopengine.skills.builtin import _actions as actions
    from loopengine.skills.builtin import _llm as llm

    return (actions, llm)
