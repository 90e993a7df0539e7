"""Bounds on a model's regular expression, checked on its text before the ``regex`` module
compiles it: compiling builds an item's minimum count of copies (``x{999999999}`` asks for
gigabytes, ``(x{1000}){1000}`` for a million copies), which no deadline can stop.

The scan mirrors how ``regex`` (version 0) delimits items: escapes, character classes, comments,
groups and inline flags; it refuses the few flags that would change that (``x`` lets spaces and
comments into a count, ``V1`` nests classes, ``f`` makes each copy of a class tens of KiB)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MAX_NESTING",
    "MAX_PATTERN",
    "MAX_UNROLLED",
    "PatternSize",
    "check_pattern",
    "pattern_size",
]

MAX_PATTERN = 1000
"""Most characters of a pattern."""
MAX_UNROLLED = 10_000
"""Most characters a pattern may stand for once every repeat is copied its minimum count of
times (a few MiB compiled)."""
MAX_NESTING = 32
"""Most groups within groups."""

_COUNT = re.compile(r"\{([0-9]*),[0-9]*\}|\{([0-9]+)\}")
"""A counted repeat, as ``regex`` reads one (``{n}``, ``{n,}``, ``{,m}``, ``{n,m}``, ``{,}``)."""
_FLAG = r"(?:[abefiLmprsuwx]|V[01])"
_FLAGS = re.compile(rf"\(\?({_FLAG}*(?:-{_FLAG}+)?)([:)])")
"""Inline flags: ``(?flags)`` applies to what follows, ``(?flags:…)`` is a group."""
_REFUSED_FLAGS = {"x": "verbose", "f": "full case folding", "V1": "version 1"}
_POSIX = re.compile(r"\[:\^?[A-Za-z]+:\]")
"""A POSIX class inside a character class (``[[:alpha:]]``)."""
_STANDS_FOR = {"\\R": 8}
"""Escapes that stand for more than their text: ``\\R`` is CR LF or one of seven line ends."""
_CALL = re.compile(r"\(\?(?:R|[0-9]|[-+][0-9]|&|P>)")
"""A call to a group, which may compile another copy of it."""


@dataclass(frozen=True, slots=True)
class PatternSize:
    """What compiling a pattern costs: the characters it stands for once every repeat is copied
    its minimum count of times, and its deepest nesting of groups."""

    unrolled: int
    nesting: int


@dataclass(slots=True)
class _Group:
    total: int = 0
    """Unrolled size of what precedes the last item."""
    last: int = 0
    """Unrolled size of the last item: what a quantifier repeats."""

    def add(self, size: int) -> None:
        self.total += self.last
        self.last = size

    def size(self) -> int:
        return self.total + self.last


def pattern_size(pattern: str) -> PatternSize:
    """The size of ``pattern`` compiled; ``ValueError`` for syntax that would hide it. Over, never
    under: an item in doubt counts as its characters, a repeat its minimum count or 1."""
    groups = [_Group()]
    nesting = calls = index = 0
    while index < len(pattern):
        group, char = groups[-1], pattern[index]
        if char == "(":
            end = _transparent_end(pattern, index)
            if end is not None:
                group.total += end - index
                index = end
                continue
            calls += bool(_CALL.match(pattern, index))
            groups.append(_Group(total=1))
            nesting = max(nesting, len(groups) - 1)
        elif char == ")" and len(groups) > 1:
            closed = groups.pop()
            groups[-1].add(closed.size() + 1)
        elif char == "{" and (count := _COUNT.match(pattern, index)):
            group.last *= max(int(count[1] or count[2] or 0), 1)
            group.total += 1
            index = count.end()
            continue
        elif char in "?*+|":
            group.add(0)
            group.total += 1
        else:
            end = _item_end(pattern, index)
            group.add(_STANDS_FOR.get(pattern[index:end], end - index))
            index = end
            continue
        index += 1
    unrolled = sum(group.size() for group in groups)
    return PatternSize(unrolled * (1 + calls), nesting)


def _transparent_end(pattern: str, start: int) -> int | None:
    """Where the comment or the inline flags at ``start`` end (neither is an item: a quantifier
    after one repeats the item before it); None for a group."""
    if pattern.startswith("(?#", start):
        return _comment_end(pattern, start)
    flags = _FLAGS.match(pattern, start)
    if flags is None:
        return None
    for flag, name in _REFUSED_FLAGS.items():
        if flag in flags[1]:
            raise ValueError(f"the inline flag '{flag}' ({name}) is not supported: leave it out")
    return flags.end() if flags[2] == ")" else None


def _item_end(pattern: str, start: int) -> int:
    """Where the item at ``start`` ends: an escape's first two characters (the rest of a longer
    one holds no delimiter), a whole character class, else one character."""
    if pattern[start] == "\\":
        return start + 2
    if pattern[start] == "[":
        return _class_end(pattern, start)
    return start + 1


def _class_end(pattern: str, start: int) -> int:
    """Where the character class at ``start`` ends: at the first ``]`` that is not its first
    member. A ``[`` in it is refused unless it opens a POSIX class, so no nesting is in doubt."""
    index = start + 1 + pattern.startswith("^", start + 1)
    first = True
    while index < len(pattern):
        char = pattern[index]
        if char == "]" and not first:
            return index + 1
        if char == "\\":
            index += 2
        elif char == "[":
            posix = _POSIX.match(pattern, index)
            if posix is None:
                raise ValueError(
                    "a '[' inside a character class: escape it as '\\[' "
                    "(POSIX classes such as [:alpha:] are fine)"
                )
            index = posix.end()
        else:
            index += 1
        first = False
    return len(pattern)


def _comment_end(pattern: str, start: int) -> int:
    """Where the comment ``(?#…)`` at ``start`` ends: its first ``)`` not escaped."""
    index = start + 3
    while index < len(pattern):
        if pattern[index] == ")":
            return index + 1
        index += 2 if pattern[index] == "\\" else 1
    return len(pattern)


def check_pattern(pattern: str) -> None:
    """Refuse, with the bound it breaks, a pattern too long, too deeply nested or that would
    compile to more than ``MAX_UNROLLED`` characters."""
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"the pattern has {len(pattern):,} characters (at most {MAX_PATTERN:,})")
    size = pattern_size(pattern)
    if size.nesting > MAX_NESTING:
        raise ValueError(
            f"the pattern nests groups {size.nesting} deep (at most {MAX_NESTING}): flatten it"
        )
    if size.unrolled > MAX_UNROLLED:
        raise ValueError(
            f"the pattern stands for {size.unrolled:,} characters once its repeats are copied "
            f"their minimum count of times (at most {MAX_UNROLLED:,}): lower the n of x{{n}} "
            "and x{n,m}, or use + and *"
        )
