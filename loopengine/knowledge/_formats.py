"""Documents as blocks of text: Markdown (ATX and setext headings, fenced code kept whole), plain
text, HTML (headings kept, scripts and styles left out) and PDF (when ``pypdf`` is installed)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = [
    "MAX_FRONT_MATTER_LINES",
    "MAX_PDF_PAGES",
    "Block",
    "Unreadable",
    "html_blocks",
    "markdown_blocks",
    "pdf_blocks",
]

MAX_PDF_PAGES = 5_000
"""Pages of a PDF read; the rest are left out."""


class Unreadable(Exception):
    """A file that cannot be read as its format says; the message says why, in a few words."""


@dataclass(frozen=True, slots=True)
class Block:
    """A heading (``level`` 1 to 6) or a paragraph (``level`` 0)."""

    text: str
    level: int = 0


_BLANK = re.compile(r"\n[ \t]*\n")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_CLOSING = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t](.*))?")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
MAX_FRONT_MATTER_LINES = 1_000
"""Lines a front matter may span; a first line ``---`` not closed within them is a rule."""


def text_blocks(text: str) -> list[Block]:
    """Paragraphs: the text between blank lines."""
    return [Block(part.strip("\n")) for part in _BLANK.split(text) if part.strip()]


def _fences(lines: list[str]) -> dict[int, int]:
    """The fenced code blocks of ``lines``: each opening line's closing line (the first later
    line of the same fence character, at least as long, and nothing else). An opening never
    closed is plain text (a reStructuredText ``~~~`` underline, say), found in linear time."""
    marks = [(i, found.group(1)) for i, line in enumerate(lines) if (found := _FENCE.match(line))]
    later: dict[str, list[int]] = {"`": [0], "~": [0]}
    for index, mark in reversed(marks):
        closes = _CLOSING.fullmatch(lines[index]) is not None
        for char, longest in later.items():
            longest.append(max(longest[-1], len(mark) if closes and mark[0] == char else 0))
    for longest in later.values():
        longest.reverse()
    fences: dict[int, int] = {}
    position = 0
    while position < len(marks):
        index, mark = marks[position]
        if later[mark[0]][position + 1] < len(mark):
            position += 1
            continue
        position += 1
        while not (
            marks[position][1][0] == mark[0]
            and len(marks[position][1]) >= len(mark)
            and _CLOSING.fullmatch(lines[marks[position][0]])
        ):
            position += 1
        fences[index] = marks[position][0]
        position += 1
    return fences


def _without_front_matter(lines: list[str]) -> list[str]:
    """``lines`` without the front matter that opens them: from a first line ``---`` to the next
    ``---`` or ``...`` line, within ``MAX_FRONT_MATTER_LINES``."""
    if not lines or lines[0].rstrip(" \t") != "---":
        return lines
    for index in range(1, min(len(lines), MAX_FRONT_MATTER_LINES)):
        if lines[index].rstrip(" \t") in ("---", "..."):
            return lines[index + 1 :]
    return lines


def _heading_text(rest: str) -> str:
    """The text of an ATX heading from what follows its opening ``#``s: its closing ``#``s (those
    after a space or tab, or alone) left out."""
    text = rest.strip(" \t")
    bare = text.rstrip("#")
    return (bare if not bare or bare[-1] in " \t" else text).strip()


def markdown_blocks(text: str) -> list[Block]:
    """Headings and paragraphs of a Markdown document (front matter left out); a fenced code
    block is one paragraph, blank lines and ``#`` lines in it included."""
    lines = _without_front_matter(text.splitlines())
    fences = _fences(lines)
    blocks: list[Block] = []
    paragraph: list[str] = []

    def close() -> None:
        if any(line.strip() for line in paragraph):
            blocks.append(Block("\n".join(paragraph).strip("\n")))
        paragraph.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        if index in fences:
            close()
            paragraph.extend(lines[index : fences[index] + 1])
            close()
            index = fences[index]
        elif heading := _ATX.fullmatch(line):
            close()
            blocks.append(Block(_heading_text(heading.group(2) or ""), len(heading.group(1))))
        elif (underline := _SETEXT.fullmatch(line)) and paragraph:
            title = " ".join(part.strip() for part in paragraph)
            paragraph.clear()
            blocks.append(Block(title, 1 if underline.group(1)[0] == "=" else 2))
        elif not line.strip():
            close()
        else:
            paragraph.append(line)
        index += 1
    close()
    return blocks


_SKIPPED = frozenset(
    {"script", "style", "template", "noscript", "svg", "head", "iframe", "object", "math"}
)
_BREAKS = frozenset(
    {
        "p", "div", "br", "li", "tr", "td", "th", "pre", "blockquote", "section", "article",
        "table", "ul", "ol", "dl", "dt", "dd", "hr", "header", "footer", "main", "aside", "nav",
        "figure", "figcaption", "form", "body", "details", "summary", "caption",
    }
)  # fmt: skip
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_SPACES = re.compile(r"\s+")


class _HtmlText(HTMLParser):
    """Collects headings and paragraphs; whitespace collapsed but in ``<pre>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._parts: list[str] = []
        self._skipping = 0
        self._pre = 0
        self._level = 0

    def _flush(self) -> None:
        raw = "".join(self._parts)
        self._parts.clear()
        text = raw.strip("\n") if self._pre else _SPACES.sub(" ", raw).strip()
        if text.strip():
            self.blocks.append(Block(text.strip() if self._level else text, self._level))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _HEADINGS or tag in _BREAKS:
            self._flush()
            self._level = _HEADINGS.get(tag, 0)
            self._pre += tag == "pre"
            if tag == "li":
                self._parts.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _HEADINGS or tag in _BREAKS:
            self._flush()
            self._level = 0
            self._pre = max(0, self._pre - (tag == "pre"))

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self._parts.append(data)

    def close(self) -> None:
        if self.rawdata.startswith("<"):
            # What feed() left starts with a tag or comment never closed: it runs to the end, as
            # in a browser (and in html.parser since gh-135462). Before that fix, close() reads it
            # as text up to the next "<" and scans to the end again from there: quadratic time.
            self.rawdata = ""
        super().close()
        self._flush()


def html_blocks(text: str) -> list[Block]:
    """Headings (``h1``–``h6``) and paragraphs of an HTML page, without scripts, styles and the
    ``head``; a tag or comment never closed runs to the end, as in a browser. ``Unreadable``
    when html.parser gives up (on a ``<![`` section it does not know)."""
    parser = _HtmlText()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError as exc:  # how html.parser refuses a declaration it cannot read
        raise Unreadable(f"not readable HTML ({exc})") from None
    return parser.blocks


def _pages(data: bytes) -> Iterator[str]:
    try:
        import pypdf
    except ImportError:
        raise Unreadable("a PDF, and pypdf is not installed: pip install pypdf") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise Unreadable("an encrypted PDF")
        for number, page in enumerate(reader.pages):
            if number >= MAX_PDF_PAGES:
                return
            yield page.extract_text() or ""
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        raise Unreadable(f"not a readable PDF ({type(exc).__name__}: {exc})") from None


def pdf_blocks(data: bytes) -> list[Block]:
    """The paragraphs of a PDF's pages (its first ``MAX_PDF_PAGES``); ``Unreadable`` when
    ``pypdf`` is not installed or cannot read it."""
    return [block for page in _pages(data) for block in text_blocks(page)]
