"""Decided actions resolve, approvals name real actions, scopes are bounded, ids are unique."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from loopengine._diagnostics import Path
from loopengine._suggestions import did_you_mean, hint, within_two_edits
from loopengine.contract._enums import BuiltinAction
from loopengine.contract._routing import ActionKey, routed
from loopengine.contract.checks._walk import Checked, at, walk

__all__ = ["check_actions", "check_unique_names"]

_UNIQUE: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("act", "actions", "*"), "action_id", "action id"),
    (("analyze", "analysis_steps", "*"), "name", "analysis step name"),
    (("analyze", "context_required", "*"), "context_type", "context type"),
    (("detect", "sources", "*"), "as", "source 'as' name"),
    (("learn", "feedback_sources", "*"), "name", "feedback source name"),
    (("store", "artifacts", "*"), "name", "artifact name"),
)


def _decided(data: Any) -> Iterator[tuple[Path, str]]:
    for path, rule in walk(data, ("decide", "decision_tree", "*")):
        if isinstance(action := at(rule, "action"), str):
            yield (*path, "action"), action
    if isinstance(fallback := at(data, "decide", "fallback_action"), str):
        yield ("decide", "fallback_action"), fallback


_EFFECTS = {BuiltinAction.LOG_AND_NOTIFY.value: frozenset({"notify", "log_only"})}
"""Built-in actions that do what others do: gating one gates them."""


def _key(action: Mapping[str, object]) -> ActionKey:
    on = action.get("on")
    tags = [t for t in on if isinstance(t, str)] if isinstance(on, list) else None
    action_id = action.get("action_id")
    return (action_id if isinstance(action_id, str) else None), tags


def _check_gate(
    checked: Checked, decided: dict[Path, str], actions: Sequence[Mapping[str, object]]
) -> None:
    """The approval gate cannot be bypassed by naming: a decision that falls to the catch-all
    while it nearly spells a known name is a typo, and a decision the gate does not cover must
    not run an action a gated decision runs."""
    keys = [_key(a) for a in actions]
    gated = {
        name
        for _, name in walk(
            checked.document.data, ("decide", "human_approval", "required_for", "*")
        )
        if isinstance(name, str)
    }
    known = {k for k, _ in keys if k} | {t for _, on in keys for t in on or ()} | set(BuiltinAction)
    guarded = {i: name for name in gated for i in routed(name, keys)[0]}
    for path, name in decided.items():
        positions, fell = routed(name, keys)
        typo = fell and bool(positions)
        near = [k for k in sorted(known) if within_two_edits(name, k)] if typo else []
        if near:
            checked.error(
                path,
                f"'{name}' is no action, built-in or on: tag, so it would run the catch-all "
                f"actions; did you mean '{near[0]}'?",
            )
            continue
        if name in gated:
            continue
        for effect in sorted(_EFFECTS.get(name, frozenset()) & gated):
            checked.error(
                path,
                f"'{name}' does what '{effect}' does without the approval '{effect}' requires "
                f"(human_approval.required_for): add '{name}' there",
            )
        for position in positions:
            if position in guarded:
                action_id = keys[position][0] or f"act.actions[{position}]"
                checked.error(
                    path,
                    f"'{name}' runs action '{action_id}' without the approval that "
                    f"'{guarded[position]}' requires (human_approval.required_for): add "
                    f"'{name}' there, {_ungated(name, keys[position])}",
                )
                break


def _ungated(name: str, key: ActionKey) -> str:
    """How else an action stops being reached by the decision ``name``."""
    action_id, on = key
    if on is None:
        return "or give the action an on: list"
    if name in on:
        return f"or take '{name}' out of its on: list"
    return f"or rename action '{action_id}'"


def check_actions(checked: Checked) -> None:
    data = checked.document.data
    actions = [a for _, a in walk(data, ("act", "actions", "*")) if isinstance(a, dict)]
    ids = {a["action_id"] for a in actions if isinstance(a.get("action_id"), str)}
    tags = {
        t for a in actions if isinstance(a.get("on"), list) for t in a["on"] if isinstance(t, str)
    }
    catch_all = any(a.get("on") is None for a in actions)
    resolvable = ids | tags | set(BuiltinAction)
    decided = dict(_decided(data))
    for path, name in decided.items():
        if name not in resolvable and not catch_all:
            known = ", ".join(sorted(resolvable))
            suggestion = did_you_mean(name, resolvable)
            checked.error(path, f"unknown action '{name}' (known: {known}){suggestion}")
    _check_gate(checked, decided, actions)
    names = set(decided.values())
    for path, tag in walk(data, ("act", "actions", "*", "on", "*")):
        if isinstance(tag, str) and tag not in names:
            checked.warning(path, f"no decision rule chooses '{tag}', so this never runs on it")
    for path, gated in walk(data, ("decide", "human_approval", "required_for", "*")):
        if isinstance(gated, str) and gated not in names | ids:
            checked.error(
                path, f"approval names '{gated}', which no rule decides; {hint(gated, names | ids)}"
            )
    for path, action in walk(data, ("act", "actions", "*")):
        if isinstance(action, dict) and "items" in action and "max_affected" not in action:
            checked.error(
                (*path, "items"),
                "'items' needs 'max_affected' to bound the scope (e.g. max_affected: 100)",
                at_key=True,
            )


def check_unique_names(checked: Checked) -> None:
    for pattern, key, label in _UNIQUE:
        seen: set[str] = set()
        for path, node in walk(checked.document.data, pattern):
            value = at(node, key)
            if isinstance(value, str):
                if value in seen:
                    checked.error((*path, key), f"duplicate {label} '{value}'")
                seen.add(value)
