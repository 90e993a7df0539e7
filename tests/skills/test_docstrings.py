"""Docstring summaries and argument descriptions for tool schemas."""

from __future__ import annotations

from loopengine.skills import parse_docstring


def test_google_style() -> None:
    doc = """Create a note.

    More detail.

    Args:
        title: The title.
        notebook_id (str): Where it goes,
            continued here.

    Returns:
        The note.
    """
    assert parse_docstring(doc) == (
        "Create a note.",
        {"title": "The title.", "notebook_id": "Where it goes, continued here."},
    )


def test_rest_style() -> None:
    assert parse_docstring("Sum.\n\n:param a: first\n:param int b: second\n") == (
        "Sum.",
        {"a": "first", "b": "second"},
    )


def test_no_docstring() -> None:
    assert parse_docstring(None) == ("", {})


def test_a_multi_line_summary_is_joined() -> None:
    assert parse_docstring("Read a file\nfrom the sandbox.\n\nArgs:\n    path: Where.")[0] == (
        "Read a file from the sandbox."
    )
