"""Documents read into headings and paragraphs, by format."""

from __future__ import annotations

import pytest

from loopengine.knowledge._formats import (
    MAX_FRONT_MATTER_LINES,
    Block,
    Unreadable,
    html_blocks,
    markdown_blocks,
    text_blocks,
)

LONG = 1_000_000
"""Characters of an adversarial document: far beyond what a parser quadratic in it could read."""


def test_markdown_headings_of_both_kinds_and_their_levels() -> None:
    text = "# Guide\n\nIntro.\n\nInstall\n-------\n\nRun it.\n\n### Linux ###\n\napt install.\n"
    assert markdown_blocks(text) == [
        Block("Guide", 1),
        Block("Intro."),
        Block("Install", 2),
        Block("Run it."),
        Block("Linux", 3),
        Block("apt install."),
    ]


def test_a_fenced_code_block_is_one_paragraph_whatever_it_holds() -> None:
    text = "Before.\n\n```python\n# not a heading\n\nx = 1\n```\nAfter.\n"
    assert markdown_blocks(text) == [
        Block("Before."),
        Block("```python\n# not a heading\n\nx = 1\n```"),
        Block("After."),
    ]


def test_a_fence_never_closed_is_plain_text_not_the_rest_of_the_file() -> None:
    text = "Title\n~~~~~\n\nFirst.\n\n# Next\n\nSecond.\n"
    assert markdown_blocks(text) == [
        Block("Title\n~~~~~"),
        Block("First."),
        Block("Next", 1),
        Block("Second."),
    ]


def test_front_matter_is_left_out() -> None:
    assert markdown_blocks("---\ntitle: x\n---\n# Real\n\nBody.\n") == [
        Block("Real", 1),
        Block("Body."),
    ]


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ("## Install ##  ", "Install"),
        ("# C# #", "C#"),
        ("### ###", ""),
        ("#\tTabs\t#", "Tabs"),
        pytest.param("# a" + " " * LONG + "b", "a" + " " * LONG + "b", id="long-spaces"),
    ],
)
def test_an_atx_heading_drops_its_closing_hashes_only_after_a_space(line: str, text: str) -> None:
    assert markdown_blocks(line) == [Block(text, len(line) - len(line.lstrip("#")))]


def test_front_matter_is_only_at_the_very_start() -> None:
    text = "--- draft\nIntro.\n\n---\n\nImportant: unplug first.\n\n---\n"
    assert Block("Important: unplug first.") in markdown_blocks(text)


@pytest.mark.parametrize(
    ("keys", "first"),
    [(MAX_FRONT_MATTER_LINES - 2, "Body."), (MAX_FRONT_MATTER_LINES - 1, "---\nkey: value")],
)
def test_front_matter_spans_at_most_its_lines_else_it_is_text(keys: int, first: str) -> None:
    text = "---\n" + "key: value\n" * keys + "...\n\nBody.\n"
    assert markdown_blocks(text)[0].text.startswith(first)


def test_an_opening_rule_never_closed_keeps_a_long_document_whole() -> None:
    text = "---\n" + "a---\n" * (LONG // 5)
    assert markdown_blocks(text) == [Block(text.strip("\n"))]


def test_text_is_paragraphs_between_blank_lines() -> None:
    assert text_blocks("one\nline two\n\n  \n\nthree\n") == [Block("one\nline two"), Block("three")]


def test_html_keeps_headings_and_paragraphs_and_drops_scripts_styles_and_head() -> None:
    page = (
        "<html><head><title>T</title><style>p{}</style></head><body>"
        "<h1>Guide &amp; notes</h1><p>Use   <b>it</b>\n well.</p>"
        "<script>alert('x')</script><ul><li>one</li><li>two</li></ul>"
        "<h2>Code</h2><pre>a  =  1\n  b</pre></body></html>"
    )
    assert html_blocks(page) == [
        Block("Guide & notes", 1),
        Block("Use it well."),
        Block("- one"),
        Block("- two"),
        Block("Code", 2),
        Block("a  =  1\n  b"),
    ]


def test_broken_html_still_gives_its_text() -> None:
    assert html_blocks("<div><p>open <i>never closed<h3>Late</h3>end") == [
        Block("open never closed"),
        Block("Late", 3),
        Block("end"),
    ]


def test_a_tag_or_comment_never_closed_hides_the_rest_as_in_a_browser() -> None:
    assert html_blocks('<p>Kept.</p><a href="x>Lost</a>') == [Block("Kept.")]
    assert html_blocks("<p>Kept.</p><!-- <p>Draft</p>") == [Block("Kept.")]


@pytest.mark.parametrize("unit", ["<a", "<!--", '<a b="', "</a", "<![CDATA["])
def test_a_long_page_of_tags_never_closed_is_read_in_one_pass(unit: str) -> None:
    assert html_blocks("<p>Kept.</p>" + unit * (LONG // len(unit))) == [Block("Kept.")]


def test_a_section_html_parser_cannot_read_is_unreadable() -> None:
    with pytest.raises(Unreadable, match=r"^not readable HTML \(expected name token"):
        html_blocks("<p>x</p><![ tail")
