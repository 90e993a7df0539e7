"""'Did you mean' hints."""

from __future__ import annotations

from loopengine._suggestions import did_you_mean, hint


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
