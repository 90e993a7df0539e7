"""A loop warned at validate when its ``event.emit`` action emits what its own event trigger
matches (each run would start the next)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from loopengine.contract import LoadReport

LOOP = """\
id: cleaner
trigger: {{type: event, config: {{event_pattern: "{pattern}"}}}}
decide: {{decision_tree: [], fallback_action: announce}}
act:
  actions:
    - action_id: announce
      skill_id: event.emit
      params: {{name: "{name}", data: {{freed: 42}}}}
"""


def test_an_action_emitting_what_its_own_trigger_matches_is_warned(
    load: Callable[[str], LoadReport],
) -> None:
    report = load(LOOP.format(pattern="disk.**", name="disk.cleaned.all"))
    [warning] = [d.format() for d in report.diagnostics]
    assert report.ok
    assert warning.startswith(
        "loop.yaml:8:22: warning: act.actions[0].params.name: event 'disk.cleaned.all' matches "
        "this loop's own trigger 'disk.**': each run would start the next"
    )


@pytest.mark.parametrize(
    ("pattern", "name"),
    [("disk.*", "disk.cleaned.all"), ("disk.*", "disk.${ loop.id }"), ("seo.*", "disk.cleaned")],
    ids=["pattern-misses", "templated-name", "other-event"],
)
def test_an_action_emitting_what_its_trigger_does_not_match_is_not_warned(
    load: Callable[[str], LoadReport], pattern: str, name: str
) -> None:
    assert load(LOOP.format(pattern=pattern, name=name)).diagnostics == ()


def test_a_loop_without_an_event_trigger_is_not_warned(
    load: Callable[[str], LoadReport],
) -> None:
    text = LOOP.format(pattern="disk.*", name="disk.cleaned").replace(
        '{type: event, config: {event_pattern: "disk.*"}}', "{type: manual}"
    )
    assert load(text).diagnostics == ()
