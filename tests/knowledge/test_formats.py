"""Documents read into headings and paragraphs, by format."""

from __future__ import annotations

from loopengine.knowledge._formats import Block, html_blocks, markdown_blocks, text_blocks


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
