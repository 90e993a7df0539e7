"""Secret values are masked whole, transformed and in pieces, wherever they appear: in values,
log records and streams."""

from __future__ import annotations

import base64
import io
import logging
import sys
import uuid
from enum import Enum

from loopengine._secrets import FRAGMENT, MaskedStream, SecretFilter, redact, remember

SECRET = "tok-4f9a1c7e2b8d"


def test_the_value_its_transforms_and_its_pieces_are_masked() -> None:
    remember(SECRET)
    encoded = base64.b64encode(SECRET.encode()).decode()
    texts = [SECRET, SECRET.upper(), encoded, encoded.rstrip("="), SECRET[:FRAGMENT]]
    texts.append(SECRET[-FRAGMENT:])
    assert [redact(f"x {text} y") for text in texts] == ["x *** y"] * len(texts)


def test_keys_and_nested_values_are_masked() -> None:
    remember(SECRET)
    assert redact({SECRET: [f"a{SECRET}b", 3]}) == {"***": ["a***b", 3]}


class _Token(Enum):
    KEY = SECRET


def test_values_json_writes_as_text_are_masked() -> None:
    """A UUID and an enumeration member, which the store's encoder writes as their text."""
    key = uuid.uuid4()
    remember(str(key))
    remember(SECRET)
    assert redact([key, _Token.KEY, (SECRET, 1)]) == ["***", "***", ["***", 1]]


def test_text_without_a_secret_is_left_alone() -> None:
    remember(SECRET)
    assert redact("tok-ordinary text") == "tok-ordinary text"


def test_base64_of_a_longer_text_holding_the_secret_is_masked() -> None:
    remember(SECRET)
    for prefix in ("", "a", "ab", "api:"):
        encoded = base64.b64encode(f"{prefix}{SECRET}!".encode()).decode()
        assert "***" in redact(f"Basic {encoded}")


def test_common_words_inside_a_secret_are_not_masked_elsewhere() -> None:
    remember("https://hooks.example.com/services/T00/B00/XYZ123abc")
    remember("Password123!")
    assert redact("see https://example.org/a, the password field") == (
        "see https://example.org/a, the password field"
    )


def test_a_log_records_traceback_is_masked() -> None:
    remember(SECRET)
    try:
        raise ValueError(f"refused {SECRET}")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, "f", 1, "failed", None, sys.exc_info())
    SecretFilter().filter(record)
    assert record.exc_info is None
    assert SECRET not in str(record.exc_text)
    assert "ValueError: refused ***" in str(record.exc_text)


def test_a_stream_masks_a_secret_written_in_pieces_a_line_at_a_time() -> None:
    remember(SECRET)
    target = io.StringIO()
    stream = MaskedStream(target)
    print("the key is", SECRET[:6], file=stream, end="")
    stream.write(f"{SECRET[6:]} ok\nrest {SECRET}")
    assert target.getvalue() == "the key is *** ok\n"
    stream.close()
    assert (target.getvalue(), target.closed) == ("the key is *** ok\nrest ***", False)


def test_a_stream_writes_a_line_without_end_once_it_is_long() -> None:
    target = io.StringIO()
    MaskedStream(target).write("x" * (MaskedStream.MAX_PENDING + 1))
    assert len(target.getvalue()) == MaskedStream.MAX_PENDING + 1


def test_a_long_secret_is_masked_whole_and_in_pieces() -> None:
    """A key file's worth: the pattern of its forms nests no deeper than their branchings."""
    key = "".join(f"k{n:04d}x" for n in range(800))
    remember(key)
    assert redact(f"begin {key} end") == "begin *** end"
    assert redact(f"cut {key[2000:2020]} here") == "cut *** here"


def test_of_several_forms_starting_at_one_place_the_longest_is_masked() -> None:
    remember(SECRET)
    shorter = SECRET[:FRAGMENT]
    assert redact(f"{SECRET}!") == "***!"
    assert redact(f"{shorter}zz") == "***zz"


def test_a_text_masked_before_a_secret_was_remembered_is_masked_for_it_after() -> None:
    remember(SECRET)
    later = "lt-5c2e9d01ab7f"
    text = f"GET /items/{later}"
    assert redact(text) == text
    remember(later)
    assert redact(text) == "GET /items/***"


def test_recurring_texts_are_masked_alike_however_many_other_texts_pass_between() -> None:
    remember(SECRET)
    texts = [f"/loops/{n}/{SECRET}" for n in range(3000)]
    assert [redact(text) for text in texts + texts] == [f"/loops/{n}/***" for n in range(3000)] * 2
