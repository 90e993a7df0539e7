"""Pass 2 of validation: what JSON Schema cannot say about a loop."""

from __future__ import annotations

from loopengine._diagnostics import Diagnostic
from loopengine.contract._yaml_source import YamlDocument
from loopengine.contract.checks._actions import check_actions, check_unique_names
from loopengine.contract.checks._emits import check_own_events
from loopengine.contract.checks._expressions import check_expressions
from loopengine.contract.checks._inputs import check_params, check_storage
from loopengine.contract.checks._shell import check_shell
from loopengine.contract.checks._skills import check_skills
from loopengine.contract.checks._triggers import check_triggers
from loopengine.contract.checks._walk import Checked, Env

__all__ = ["Env", "semantic_diagnostics"]


def semantic_diagnostics(document: YamlDocument, env: Env) -> list[Diagnostic]:
    """Every semantic problem of a loop document, errors and warnings, in file order."""
    checked = Checked(document)
    if isinstance(document.data, dict):
        check_triggers(checked, env)
        check_params(checked)
        check_expressions(checked)
        check_skills(checked, env)
        check_shell(checked)
        check_actions(checked)
        check_own_events(checked)
        check_unique_names(checked)
        check_storage(checked, env)
    return sorted(checked.found, key=lambda d: (d.line, d.column))
