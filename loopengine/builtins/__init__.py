"""The built-in skills (decided actions, detect source readers ``source.<type>``, LLM skills, the
knowledge skills, and autolearn's), the tools offered to models, and the LLM runtime the LLM
skills share.

The skill modules are light: what they run (the store, the LLM client) is imported when they are
called, so a registry with the built-ins costs no database or HTTP import; the tools and the
runtime load on first use.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports
from loopengine.autolearn import _memory_skills, _review_skills, _skills
from loopengine.builtins import (
    _actions,
    _complete,
    _emit,
    _files,
    _http,
    _indexing,
    _llm,
    _rag,
    _shell,
    _sources,
    _webhook,
)
from loopengine.skills import Registry

if TYPE_CHECKING:
    from loopengine.builtins._net import checked_address, reaches_inside
    from loopengine.builtins._runtime import ChatContext, LLMRuntime
    from loopengine.builtins._tools import MAX_READ, builtin_tools, offered_tools

_EXPORTS = {
    "ChatContext": "loopengine.builtins._runtime",
    "LLMRuntime": "loopengine.builtins._runtime",
    "MAX_READ": "loopengine.builtins._tools",
    "builtin_tools": "loopengine.builtins._tools",
    "checked_address": "loopengine.builtins._net",
    "offered_tools": "loopengine.builtins._tools",
    "reaches_inside": "loopengine.builtins._net",
}

__all__ = [
    "MAX_READ",
    "ChatContext",
    "LLMRuntime",
    "builtin_registry",
    "builtin_tools",
    "checked_address",
    "offered_tools",
    "reaches_inside",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


def builtin_registry() -> Registry:
    """A registry holding the built-in skills (plugins are added to it by the workspace)."""
    registry = Registry()
    for module in (
        _actions,
        _emit,
        _files,
        _shell,
        _http,
        _webhook,
        _complete,
        _skills,
        _llm,
        _rag,
        _indexing,
        _memory_skills,
        _review_skills,
        _sources,
    ):
        registry.add_module(module)
    return registry
