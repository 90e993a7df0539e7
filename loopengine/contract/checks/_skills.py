"""Every skill a loop names exists, and its static params fit the skill's signature."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopengine._diagnostics import Path
from loopengine._suggestions import did_you_mean
from loopengine.contract._enums import SourceType
from loopengine.contract._lookup import SkillInfo
from loopengine.contract.checks._walk import Checked, Env, at, walk

__all__ = ["check_skills"]

_SKILL_REFS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("analyze", "analysis_steps", "*"), "skill_id", "params"),
    (("act", "actions", "*"), "skill_id", "params"),
    (("act", "actions", "*"), "rollback_skill", "rollback_params"),
    (("detect", "sources", "*"), "skill", "params"),
)


_SOURCE_TYPES = frozenset(kind.value for kind in SourceType)


def _dynamic(params: Mapping[str, object]) -> frozenset[str]:
    return frozenset(key for key, value in params.items() if "${" in repr(value))


def _check_params(checked: Checked, definition: SkillInfo, path: Path, params: Any) -> None:
    if not isinstance(params, dict):
        params = {}
    for problem in definition.check_params(params, _dynamic(params)):
        at_key = problem.message.startswith(f"skill '{definition.name}' has no param")
        checked.error((*path, *problem.path), problem.message, at_key=at_key)


def _unknown(name: str, known: frozenset[str]) -> str:
    suggestion = did_you_mean(name, known)
    if suggestion:
        return f"unknown skill '{name}'{suggestion}"
    return (
        f"unknown skill '{name}': no loaded plugin defines it (list its module under 'plugins:' "
        "in loopengine.yaml; `loopengine skills` shows what is loaded)"
    )


def _check_dry_run(checked: Checked, env: Env) -> None:
    if at(checked.document.data, "act", "dry_run_first") is not True:
        return
    for path, action in walk(checked.document.data, ("act", "actions", "*")):
        name = at(action, "skill_id")
        definition = env.registry.find_skill(name) if isinstance(name, str) else None
        if definition and not (definition.accepts_any_param or "dry_run" in definition.param_names):
            checked.error(
                (*path, "skill_id"),
                f"dry_run_first runs skill '{name}' with dry_run: true, but it has no 'dry_run' "
                "param: add one, or set dry_run_first: false",
            )


def check_skills(checked: Checked, env: Env) -> None:
    known = env.registry.skill_names()
    for pattern, key, params_key in _SKILL_REFS:
        for path, node in walk(checked.document.data, pattern):
            name = at(node, key)
            if not isinstance(name, str):
                continue
            definition = env.registry.find_skill(name)
            if definition is None:
                checked.error((*path, key), _unknown(name, known))
            else:
                _check_params(checked, definition, (*path, params_key), at(node, params_key))
    for path, source in walk(checked.document.data, ("detect", "sources", "*")):
        if isinstance(source, dict) and ("type" in source) == ("skill" in source):
            checked.error(path, "a source names either a built-in 'type' or a 'skill', exactly one")
        elif isinstance(source, dict):
            _check_reader_params(checked, env, path, source)
    _check_dry_run(checked, env)


def _check_reader_params(
    checked: Checked, env: Env, path: Path, source: Mapping[str, object]
) -> None:
    """A built-in source's ``params`` go to its reader skill: each must be one it takes."""
    params, kind = source.get("params"), source.get("type")
    if not isinstance(kind, str) or kind not in _SOURCE_TYPES:
        return
    if not isinstance(params, dict) or not params:
        return
    reader = env.registry.find_skill(SourceType(kind).skill)
    if reader is None:
        return
    for key in params:
        if not (reader.accepts_any_param or key in reader.param_names):
            known = reader.param_names - {"name", "filter", "freshness_hours"}
            checked.error(
                (*path, "params", key),
                f"a {source['type']} source takes no param '{key}'"
                + (f" (it takes: {', '.join(sorted(known))})" if known else ""),
                at_key=True,
            )
