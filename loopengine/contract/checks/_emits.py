"""An ``event.emit`` action whose event the loop's own event trigger matches: each run would
start the next, without end."""

from __future__ import annotations

from loopengine.contract.checks._walk import Checked, at, walk
from loopengine.triggers import matches, pattern_problem

__all__ = ["check_own_events"]


def check_own_events(checked: Checked) -> None:
    data = checked.document.data
    triggers = [*walk(data, ("trigger",)), *walk(data, ("triggers", "*"))]
    patterns = [
        pattern
        for _, trigger in triggers
        if at(trigger, "type") == "event"
        and isinstance(pattern := at(trigger, "config", "event_pattern"), str)
        and pattern_problem(pattern) is None
    ]
    for path, action in walk(data, ("act", "actions", "*")):
        name = at(action, "params", "name")
        if at(action, "skill_id") != "event.emit" or not isinstance(name, str) or "${" in name:
            continue
        for pattern in patterns:
            if matches(pattern, name):
                checked.warning(
                    (*path, "params", "name"),
                    f"event {name!r} matches this loop's own trigger {pattern!r}: each run "
                    "would start the next, without end; emit another name or narrow the pattern",
                )
