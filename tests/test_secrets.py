"""Secret values are masked whole, transformed and in pieces, wherever they appear."""

from __future__ import annotations

import base64

from loopengine._secrets import FRAGMENT, redact, remember

SECRET = "tok-4f9a1c7e2b8d"


def test_the_value_its_transforms_and_its_pieces_are_masked() -> None:
    remember(SECRET)
    encoded = base64.b64encode(SECRET.encode()).decode()
    texts = [SECRET, SECRET.upper(), encoded, encoded.rstrip("="), SECRET[:FRAGMENT], SECRET[-9:]]
    assert [redact(f"x {text} y") for text in texts] == ["x *** y"] * len(texts)


def test_keys_and_nested_values_are_masked() -> None:
    remember(SECRET)
    assert redact({SECRET: [f"a{SECRET}b", 3]}) == {"***": ["a***b", 3]}


def test_text_without_a_secret_is_left_alone() -> None:
    remember(SECRET)
    assert redact("tok-ordinary text") == "tok-ordinary text"
