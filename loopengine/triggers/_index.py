"""Which of many event patterns an event name matches, with the semantics of ``matches``; pure.

A daemon matches every event against every event trigger, so the patterns compile once into a
segment trie, walked with a set of positions (``**`` stays put while it consumes segments): the
cost follows the name's length, not the number of patterns. Recent names are remembered in a
memo of bounded size, and names over 512 characters are not remembered at all: event names
come from users, so memory must not grow with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["PatternIndex"]

T = TypeVar("T")

_MEMO_SIZE = 4096
_MEMO_NAME_CHARS = 512


class _Node:
    """A position in the trie: the next positions by literal segment, by ``*`` and by ``**``."""

    __slots__ = ("closure", "entries", "globstar", "literal", "loops", "star")

    def __init__(self, *, loops: bool) -> None:
        self.literal: dict[str, _Node] = {}
        self.star: _Node | None = None
        self.globstar: _Node | None = None
        self.loops = loops
        self.entries: list[int] = []
        self.closure: tuple[_Node, ...] = ()

    def child(self, segment: str) -> _Node:
        """The position after pattern ``segment``, created on first use."""
        if segment == "**":
            self.globstar = self.globstar or _Node(loops=True)
            return self.globstar
        if segment == "*":
            self.star = self.star or _Node(loops=False)
            return self.star
        return self.literal.setdefault(segment, _Node(loops=False))

    def seal(self) -> None:
        """Set ``closure``: this position and those ``**`` reaches without consuming a segment."""
        closure: list[_Node] = []
        node: _Node | None = self
        while node is not None:
            closure.append(node)
            node = node.globstar
        self.closure = tuple(closure)


def _compile(patterns: Iterable[str]) -> _Node:
    root = _Node(loops=False)
    for index, pattern in enumerate(patterns):
        node = root
        for segment in pattern.split("."):
            node = node.child(segment)
        node.entries.append(index)
    todo = [root]
    while todo:
        node = todo.pop()
        node.seal()
        todo.extend(node.literal.values())
        todo.extend(child for child in (node.star, node.globstar) if child is not None)
    return root


class PatternIndex(Generic[T]):
    """(pattern, value) pairs compiled once; ``match`` gives the values whose pattern matches."""

    def __init__(self, entries: Iterable[tuple[str, T]], *, memo_size: int = _MEMO_SIZE) -> None:
        pairs = list(entries)
        self._values = tuple(value for _, value in pairs)
        self._root = _compile(pattern for pattern, _ in pairs)
        self._memo: dict[str, tuple[T, ...]] = {}
        self._memo_size = memo_size

    def __len__(self) -> int:
        return len(self._values)

    def match(self, name: str) -> tuple[T, ...]:
        """The value of each entry whose pattern matches ``name``, once each, in insertion order."""
        found = self._memo.get(name)
        if found is None:
            found = self._walk(name)
            if len(name) <= _MEMO_NAME_CHARS:
                if len(self._memo) >= self._memo_size:
                    self._memo.clear()
                self._memo[name] = found
        return found

    def _walk(self, name: str) -> tuple[T, ...]:
        states = set(self._root.closure)
        for segment in name.split("."):
            following: set[_Node] = set()
            for node in states:
                if node.loops:
                    following.update(node.closure)
                if not segment:
                    continue
                literal = node.literal.get(segment)
                if literal is not None:
                    following.update(literal.closure)
                if node.star is not None:
                    following.update(node.star.closure)
            if not following:
                return ()
            states = following
        indices = sorted({index for node in states for index in node.entries})
        return tuple(self._values[index] for index in indices)
