"""'Did you mean' hints."""

from __future__ import annotations

import pytest

from loopengine._suggestions import did_you_mean, hint, within_two_edits


def test_hint_names_the_close_name() -> None:
    assert hint("seo_rol_audit", ["seo_role_audit", "canonical_check"]) == (
        "did you mean 'seo_role_audit'?"
    )


def test_hint_lists_known_names_when_none_is_close() -> None:
    assert hint("zzz", ["b", "a"]) == "known: a, b"


def test_hint_caps_a_long_list() -> None:
    assert hint("zzz", [f"name{i:02}" for i in range(20)]).endswith("… (8 more)")


def test_hint_is_empty_without_candidates() -> None:
    assert hint("x", []) == ""


def test_did_you_mean_is_empty_when_nothing_is_close() -> None:
    assert did_you_mean("qqq", ["phase", "execution"]) == ""


def test_did_you_mean_suggests() -> None:
    assert did_you_mean("phse", ["phase", "execution"]) == "; did you mean 'phase'?"


@pytest.mark.parametrize(
    ("name", "other", "expected"),
    [
        ("log_onyl", "log_only", True),
        ("lg_only", "log_only", True),
        ("log_onlyyy", "log_only", True),
        ("logonly", "log_only", True),
        ("log_only", "log_only", False),
        ("trash", "trash_stale", False),
        ("notfy", "notify", True),
        ("xyz", "notify", False),
    ],
)
def test_within_two_edits_spots_typos(name: str, other: str, expected: bool) -> None:
    assert within_two_edits(name, other) is expected
