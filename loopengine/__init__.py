"""loopengine: declarative, self-improving loops (detect → analyze → decide → act → validate →
learn → store), validated from YAML, scheduled, executed through skills and persisted.

Public names load lazily so that ``loopengine --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.contract import Diagnostic, Loop, LoopLoader, LoopSpec
    from loopengine.errors import (
        BudgetExceeded,
        ContractError,
        ExpressionError,
        LLMError,
        LoopEngineError,
        SkillError,
        StorageError,
        TriggerError,
    )
    from loopengine.expr import Expression, Template, compile_expression, compile_template
    from loopengine.skills import Registry, SkillContext, SkillOutput, skill, tool

__version__ = "0.1.0"

_EXPORTS = {
    "BudgetExceeded": "loopengine.errors",
    "ContractError": "loopengine.errors",
    "Diagnostic": "loopengine.contract",
    "Expression": "loopengine.expr",
    "ExpressionError": "loopengine.errors",
    "LLMError": "loopengine.errors",
    "Loop": "loopengine.contract",
    "LoopEngineError": "loopengine.errors",
    "LoopLoader": "loopengine.contract",
    "LoopSpec": "loopengine.contract",
    "Registry": "loopengine.skills",
    "SkillContext": "loopengine.skills",
    "SkillError": "loopengine.errors",
    "SkillOutput": "loopengine.skills",
    "StorageError": "loopengine.errors",
    "Template": "loopengine.expr",
    "TriggerError": "loopengine.errors",
    "compile_expression": "loopengine.expr",
    "compile_template": "loopengine.expr",
    "skill": "loopengine.skills",
    "tool": "loopengine.skills",
}

__all__ = [
    "BudgetExceeded",
    "ContractError",
    "Diagnostic",
    "Expression",
    "ExpressionError",
    "LLMError",
    "Loop",
    "LoopEngineError",
    "LoopLoader",
    "LoopSpec",
    "Registry",
    "SkillContext",
    "SkillError",
    "SkillOutput",
    "StorageError",
    "Template",
    "TriggerError",
    "__version__",
    "compile_expression",
    "compile_template",
    "skill",
    "tool",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
