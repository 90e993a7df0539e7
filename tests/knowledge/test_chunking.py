"""Documents cut into chunks: by section, to a size, with an overlap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopengine.knowledge._chunking import cut
from loopengine.knowledge._formats import Block
from loopengine.store.knowledge import Piece


def test_each_section_is_cut_apart_under_its_heading_path() -> None:
    blocks = [
        Block("Intro before any heading."),
        Block("Guide", 1),
        Block("Install", 2),
        Block("Run the installer."),
        Block("Linux", 3),
        Block("Use apt."),
        Block("Usage", 2),
        Block("Call it."),
    ]
    assert cut(blocks, 100, 10) == [
        Piece(0, "", "Intro before any heading."),
        Piece(1, "Guide > Install", "Run the installer."),
        Piece(2, "Guide > Install > Linux", "Use apt."),
        Piece(3, "Guide > Usage", "Call it."),
    ]


def test_paragraphs_are_packed_to_the_size_and_the_next_chunk_repeats_the_overlap() -> None:
    paragraphs = [Block(f"Paragraph {n} says something short.") for n in range(6)]
    pieces = cut(paragraphs, 120, 30)
    assert [len(piece.text) <= 120 for piece in pieces] == [True] * len(pieces)
    assert pieces[0].text.startswith("Paragraph 0 says something short.\n\nParagraph 1")
    repeated = pieces[1].text.split("\n\n")[0]
    assert pieces[0].text.endswith(repeated)
    assert repeated == "2 says something short."  # from the start of a word
    assert [piece.position for piece in pieces] == list(range(len(pieces)))


def test_a_paragraph_over_the_size_is_cut_at_sentences_then_words() -> None:
    sentence = "This sentence has exactly eight words in it. "
    (first, *rest) = cut([Block(sentence * 10)], 100, 0)
    assert first.text == (sentence * 2).strip()
    assert all(len(piece.text) <= 100 for piece in rest)


def test_a_word_longer_than_the_size_is_cut_anywhere() -> None:
    pieces = cut([Block("x" * 250)], 100, 20)
    assert all(len(piece.text) <= 100 for piece in pieces)
    assert "".join(piece.text for piece in pieces).count("x") >= 250


def test_a_heading_without_text_makes_no_chunk() -> None:
    assert cut([Block("Empty", 1), Block("Full", 1), Block("Body.")], 100, 0) == [
        Piece(0, "Full", "Body.")
    ]


@given(
    st.lists(st.text(st.characters(codec="utf-8"), max_size=400), max_size=12),
    st.integers(100, 300),
    st.integers(0, 99),
)
def test_no_chunk_is_ever_over_the_size(paragraphs: list[str], size: int, overlap: int) -> None:
    pieces = cut([Block(text) for text in paragraphs if text.strip()], size, overlap)
    assert all(len(piece.text) <= size for piece in pieces)
