"""The built-in skills: decided actions, detect source readers (``source.<type>``) and LLM skills.

Their modules are light: what they run (the store, the LLM client) is imported when they are
called, so a registry with the built-ins costs no database or HTTP import.
"""

from loopengine.skills._registry import Registry
from loopengine.skills.builtin import _actions, _autolearn, _llm, _memory, _review, _sources

__all__ = ["builtin_registry"]


def builtin_registry() -> Registry:
    """A registry holding the built-in skills (plugins are added to it by the workspace)."""
    registry = Registry()
    for module in (_actions, _autolearn, _llm, _memory, _review, _sources):
        registry.add_module(module)
    return registry
