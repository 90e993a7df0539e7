"""How deep a YAML text nests, read from its characters before any YAML library composes it.

libyaml refuses more than 1,000 levels with a message of its own, and older versions recurse
until the C stack overflows, so the depth is measured here, in one pass over the lines, following
the rules of YAML that decide what nests: flow brackets and block indentation (``- ``, ``? `` and
keys) open collections; quoted, block and plain scalars and comments do not.
"""

from __future__ import annotations

import re

__all__ = ["too_deep"]

_INDICATOR = re.compile(r"[-?:](?:[ \t]+|$)")
"""``- ``, ``? `` or ``: `` starting a node (``-1`` or ``:x`` start a plain scalar)."""
_PLAIN_END = re.compile(r"[ \t]#|:(?:[ \t]|$)")
"""Where a plain scalar ends on its line: a comment, or the colon of a key."""
_KEY_COLON = re.compile(r"[ \t]*+:(?:[ \t]|$)")
_PROPERTY = re.compile(r"[&*][\w-]*+|![^ \t,\[\]{}]*+")
"""An anchor or alias (letters, digits, ``-``, ``_``) or a tag."""
_BLOCK_SCALAR = re.compile(r"[|>](?:([1-9])[+-]?|[+-]([1-9])?)?(?=[ \t]|$)")
_FLOW = re.compile(r"[\[\]{}\"']|(?:^|(?<=[ \t]))#")
_SPACES = re.compile(r"[ \t]*+")
_INNERMOST = re.compile(r"(?:[^\[\]{}\"'#]*+[\[{][^\[\]{}\"'#]*+[\]}])++")
"""A run of flow collections holding no collection, quote or comment: one level deeper at most."""
_INDENTATION = r"\n[ \t?:-]{%d}"
"""A line starting with that many spaces or indicators: a block collection opens within them or
right after."""
_QUOTE_END = {"'": re.compile(r"(?:[^']++|'')*+'"), '"': re.compile(r'(?:[^"\\]++|\\.?)*+"')}
"""From inside a quoted scalar to just past its closing quote, when it closes on this line."""


class _Deep(Exception):
    def __init__(self, line: int, column: int) -> None:
        self.at = (line + 1, column + 1)


class _Reader:
    """Reads a text line by line, keeping the open block collections (column, whether a sequence)
    and the count of open flow collections."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.line = 0
        self.blocks: list[tuple[int, bool]] = []
        self.flow = 0
        self.quote = ""
        """The quote of a scalar that goes on past its line."""
        self.plain = False
        """Whether a plain scalar may go on, on lines indented deeper than its collection."""
        self.block_scalar: tuple[int, int | None] | None = None
        """The lowest indentation of a ``|``/``>`` scalar's lines, and theirs once known."""
        self.node_next = True
        """In flow context: whether what comes next starts a node (a quote opens a scalar)."""

    def read(self, line: str) -> None:
        if self.quote:
            end = self._quoted(line, 0, self.quote)
            if end is not None:
                self._rest(line, end)
            return
        if self.flow:
            self._flow(line, 0)
            return
        text = line.lstrip(" ")
        indent = len(line) - len(text)
        if self.block_scalar is not None and self._in_block_scalar(text, indent):
            return
        if not text.strip() or text[0] == "#":
            self.plain = self.plain and text[:1] != "#"
            return
        if self.plain and indent > self._top():
            return
        self.plain = False
        if indent == 0 and text[:3] in ("---", "...") and text[3:4] in ("", " ", "\t"):
            self.blocks.clear()
            if text[0] == "-":
                self._block(line, 3, keys=False)
            return
        if indent == 0 and text[0] == "%":
            return
        while self.blocks and self.blocks[-1][0] > indent:
            self.blocks.pop()
        self._block(line, indent, keys=True)

    def _top(self) -> int:
        return self.blocks[-1][0] if self.blocks else -1

    def _check(self, column: int) -> None:
        if len(self.blocks) + self.flow > self.limit:
            raise _Deep(self.line, column)

    def _open(self, column: int, sequence: bool) -> None:
        """A block entry (``sequence``) or key at ``column``: a new collection when it stands
        deeper than the last, or a sequence written at its key's indentation."""
        top, top_is_sequence = self.blocks[-1] if self.blocks else (-1, False)
        if column > top or (sequence and column == top and not top_is_sequence):
            self.blocks.append((column, sequence))
            self._check(column)
        elif not sequence and top_is_sequence and self.blocks[-2:-1] == [(column, False)]:
            self.blocks.pop()

    def _in_block_scalar(self, text: str, indent: int) -> bool:
        """Whether the line belongs to the ``|``/``>`` scalar being read (which ends if not)."""
        assert self.block_scalar is not None
        lowest, width = self.block_scalar
        if not text:
            return True
        if width is None and indent >= lowest:
            self.block_scalar = (lowest, indent)
            return True
        if width is not None and indent >= width:
            return True
        self.block_scalar = None
        return False

    def _block(self, line: str, column: int, *, keys: bool) -> None:
        """Read a line in block context from ``column``: entries and keys (from their anchor or
        tag) open collections, and the value that follows ends what can nest on the line."""
        node = -1
        while True:
            column = _SPACES.match(line, column).end()  # type: ignore[union-attr]
            if column >= len(line) or line[column] == "#":
                return
            char = line[column]
            indicator = _INDICATOR.match(line, column)
            if indicator is not None:
                if char != ":" and not keys:
                    return
                if char != ":":
                    self._open(column, char == "-")
                keys = keys and char != ":"
                column = indicator.end()
            elif char in "&!":
                node = column if node < 0 else node
                column = _PROPERTY.match(line, column).end()  # type: ignore[union-attr]
            elif char in "[{":
                self.flow, self.node_next = 1, True
                self._check(column)
                self._flow(line, column + 1)
                return
            elif char in "|>":
                self._start_block_scalar(line, column)
                return
            else:
                end = self._scalar(line, column, char)
                if end is None:
                    return
                key = _KEY_COLON.match(line, end) if keys else None
                if key is None:
                    return
                self._open(column if node < 0 else node, False)
                keys, column = False, key.end()

    def _scalar(self, line: str, column: int, char: str) -> int | None:
        """Where a quoted scalar or an alias starting at ``column`` ends, or a plain one that is
        a key; None when the scalar is the line's last node."""
        if char in "'\"":
            return self._quoted(line, column + 1, char)
        if char == "*":
            return _PROPERTY.match(line, column).end()  # type: ignore[union-attr]
        stop = _PLAIN_END.search(line, column)
        if stop is not None and line[stop.start()] == ":":
            return stop.start()
        self.plain = stop is None
        return None

    def _start_block_scalar(self, line: str, column: int) -> None:
        header = _BLOCK_SCALAR.match(line, column)
        if header is None:
            return
        top = self._top()
        width = header[1] or header[2]
        lowest = max(top + 1, 1)
        known = None if width is None else max(top, 0) + int(width)
        self.block_scalar = (lowest, known)

    def _quoted(self, line: str, column: int, quote: str) -> int | None:
        """Just past the closing quote, or None when the scalar goes on to the next line."""
        found = _QUOTE_END[quote].match(line, column)
        self.quote = "" if found else quote
        return found.end() if found else None

    def _rest(self, line: str, column: int) -> None:
        """The rest of a line after a quoted scalar that began on an earlier one."""
        if self.flow:
            self.node_next = False
            self._flow(line, column)
        else:
            self._block(line, column, keys=False)

    def _flow(self, line: str, column: int) -> None:
        """Read a line in flow context from ``column``: brackets nest; quoted scalars (a quote
        that starts a node) and comments do not."""
        while True:
            found = _FLOW.search(line, column)
            if found is None:
                self.node_next = self._node_after(line[column:])
                return
            at = found.start()
            char = line[at]
            self.node_next = self._node_after(line[column:at])
            column = at + 1
            if char in "[{" and len(self.blocks) + self.flow < self.limit:
                innermost = _INNERMOST.match(line, at)
                if innermost is not None:
                    self.node_next = False
                    column = innermost.end()
                    continue
            if char == "#":
                return
            if char in "'\"":
                if self.node_next:
                    end = self._quoted(line, column, char)
                    if end is None:
                        return
                    column = end
                self.node_next = False
            elif char in "[{":
                self.flow += 1
                self.node_next = True
                self._check(at)
            else:
                self.flow = max(self.flow - 1, 0)
                self.node_next = False
                if not self.flow:
                    self._block(line, column, keys=False)
                    return

    def _node_after(self, text: str) -> bool:
        """Whether a node starts after ``text`` (read since the last bracket or quote): after
        ``,``, ``:``, ``?`` or a property; not inside a plain scalar."""
        words = text.split()
        if not words:
            return self.node_next
        last = words[-1]
        return last[-1] in ",:?" or last[0] in "!&"


def too_deep(text: str, limit: int) -> tuple[int, int] | None:
    """Where ``text`` first opens a collection more than ``limit`` levels deep (line and column,
    1-based), or None when it nests no deeper.

    Most texts are known not to from two counts: every flow collection needs a bracket, and block
    collections open at distinct columns (two at most at one: a sequence at its key's), each
    within or right after the spaces and indicators that start some line (when every line ends
    in a line feed; texts with other line breaks are rare enough to be read through).
    """
    columns = (limit - text.count("[") - text.count("{")) // 2
    if columns > 0 and _plain_breaks(text) and not re.search(_INDENTATION % columns, "\n" + text):
        return None
    reader = _Reader(limit)
    try:
        for number, line in enumerate(text.splitlines()):
            reader.line = number
            reader.read(line)
    except _Deep as deep:
        return deep.at
    return None


def _plain_breaks(text: str) -> bool:
    """Whether every line break of ``text`` is a line feed (after a carriage return or not)."""
    return text.count("\r") == text.count("\r\n") and not any(c in text for c in "\x85\u2028\u2029")
