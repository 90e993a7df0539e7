"""Event patterns: ``*`` is one segment, ``**`` any depth; anchored and case-sensitive."""

from __future__ import annotations

import pytest

from loopengine.triggers import matches, pattern_problem


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("seo.page.updated", "seo.page.updated", True),
        ("seo.*", "seo.page", True),
        ("seo.*", "seo.page.updated", False),
        ("seo.*", "seo", False),
        ("seo.**", "seo", True),
        ("seo.**", "seo.page.updated", True),
        ("**.done", "seo.audit.done", True),
        ("**.done", "done", True),
        ("a.**.z", "a.z", True),
        ("a.**.z", "a.b.c.z", True),
        ("a.**.z", "a.b.c", False),
        ("seo.page", "SEO.page", False),
        ("seo.page", "seo.page.x", False),
        ("a.*.c", "a..c", False),
        ("**", "any.thing.at.all", True),
    ],
)
def test_matching(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


@pytest.mark.parametrize("pattern", ["seo.page", "seo.*", "**.done", "cluster-1.node_2.*"])
def test_valid_patterns(pattern: str) -> None:
    assert pattern_problem(pattern) is None


@pytest.mark.parametrize("pattern", ["seo.*page", "seo..page", "seo page", "seo.***"])
def test_invalid_patterns(pattern: str) -> None:
    assert "invalid event pattern" in (pattern_problem(pattern) or "")
