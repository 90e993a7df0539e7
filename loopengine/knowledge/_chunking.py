"""Chunks of a document: a section (the paragraphs under one heading path) is cut at paragraph
boundaries into chunks of at most ``size`` characters, each starting with the last ``overlap``
characters of the one before it; a paragraph over ``size`` is cut at lines, then sentences,
then words. A chunk never spans two sections."""

from __future__ import annotations

import re
from collections.abc import Iterable

from loopengine.knowledge._formats import Block
from loopengine.store.knowledge import Piece

__all__ = ["HEADING_SEPARATOR", "cut"]

HEADING_SEPARATOR = " > "
_SEPARATORS = (
    (re.compile(r"\n"), "\n"),
    (re.compile(r"(?<=[.!?])\s+"), " "),
    (re.compile(r"\s+"), " "),
)
_WORD_START = re.compile(r"\s+")


def _split(text: str, size: int, level: int = 0) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut at the coarsest separator that
    makes them fit (a word longer than ``size`` is cut anywhere)."""
    if len(text) <= size:
        return [text]
    if level == len(_SEPARATORS):
        return [text[start : start + size] for start in range(0, len(text), size)]
    pattern, joiner = _SEPARATORS[level]
    pieces: list[str] = []
    current = ""
    for part in pattern.split(text):
        for small in _split(part, size, level + 1) if part else ():
            if current and len(current) + len(joiner) + len(small) > size:
                pieces.append(current)
                current = small
            else:
                current = f"{current}{joiner}{small}" if current else small
    if current:
        pieces.append(current)
    return pieces


def _tail(text: str, overlap: int) -> str:
    """The last ``overlap`` characters of ``text`` or fewer, from the start of a word."""
    if overlap <= 0 or not text:
        return ""
    tail = text[-overlap:]
    if len(tail) < len(text) and not text[-overlap - 1].isspace():
        space = _WORD_START.search(tail)
        tail = tail[space.end() :] if space else ""
    return tail.strip()


def _pack(paragraphs: list[str], size: int, overlap: int) -> list[str]:
    """A section's paragraphs as chunks of at most ``size`` characters with ``overlap``."""
    chunks: list[str] = []
    current = ""
    for paragraph in paragraphs:
        for index, part in enumerate(_split(paragraph, size)):
            joiner = " " if index else "\n\n"
            if current and len(current) + len(joiner) + len(part) > size:
                chunks.append(current)
                current = _tail(current, min(overlap, size - len(part) - len(joiner)))
            current = f"{current}{joiner}{part}" if current else part
    if current:
        chunks.append(current)
    return chunks


def cut(blocks: Iterable[Block], size: int, overlap: int) -> list[Piece]:
    """The chunks of a document's ``blocks``, numbered in order, each under its heading path
    (``Install > Linux``; empty before the first heading)."""
    pieces: list[Piece] = []
    path: list[Block] = []
    section: list[str] = []

    def close_section() -> None:
        heading = HEADING_SEPARATOR.join(block.text for block in path)
        for text in _pack(section, size, overlap):
            pieces.append(Piece(len(pieces), heading, text))
        section.clear()

    for block in blocks:
        if block.level:
            close_section()
            path = [*(above for above in path if above.level < block.level), block]
        else:
            section.append(block.text)
    close_section()
    return pieces
