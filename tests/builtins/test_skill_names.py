"""The names the loop schema offers an editor where a skill is named are the built-in
registry's, no more and no fewer."""

from __future__ import annotations

from loopengine.builtins import builtin_registry
from loopengine.contract import loop_schema
from loopengine.contract._enums import BUILTIN_SKILLS


def test_the_names_offered_are_the_built_in_skills() -> None:
    assert sorted(BUILTIN_SKILLS) == sorted(d.name for d in builtin_registry().skills)


def test_the_loop_schema_offers_them_where_a_loop_names_a_skill() -> None:
    definitions = loop_schema()["$defs"]
    offered = [
        definitions["Action"]["properties"]["skill_id"],
        definitions["Action"]["properties"]["rollback_skill"],
        definitions["AnalysisStep"]["properties"]["skill_id"],
        definitions["Source"]["properties"]["skill"],
    ]
    assert all(field["examples"] == list(BUILTIN_SKILLS) for field in offered)
