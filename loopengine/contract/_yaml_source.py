"""Safe YAML loading that remembers where every key and value stands.

Only plain data is built: tags that would run code (``!!python/...``) are errors, keys are kept as
written (``on:`` stays the string ``on``), booleans are YAML 1.2's ``true``/``false`` only.

Untrusted text is bounded before it costs anything: over ``MAX_BYTES`` it is refused unread; nested
deeper than ``MAX_DEPTH`` it is refused from its text, before any YAML library reads it (libyaml
refuses 1,000 levels with its own message, and older versions overflow the C stack at ~30,000);
and a document that expands past ``MAX_NODES`` nodes, aliases and ``<<`` merges counted, is
refused while it is built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

import yaml
from yaml import nodes
from yaml.error import Mark

from loopengine._diagnostics import Diagnostic, Level, Path, shown_key
from loopengine.contract._yaml_depth import too_deep
from loopengine.errors import ContractError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_NUMBER",
    "Position",
    "YamlDocument",
    "parse_yaml",
    "read_source",
]

MAX_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_NUMBER = 64
"""Longest number written in a file (Python refuses ints past 4,300 digits; base 60 is slow)."""
_SAFE_SIZE = 256 * 1024
"""Below this many characters, no document holds enough values to cost much before it is
counted while built; larger ones are counted from their events first."""

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _BOOL, _TIMESTAMP, _MERGE = (_TAG + name for name in ("str", "bool", "timestamp", "merge"))
_CONSTRUCTED_TAGS = {_TAG + name for name in ("null", "bool", "int", "float")}
_COLLECTION_TAGS = {_TAG + "map", _TAG + "seq"}
_NUMBERS = {_TAG + "int", _TAG + "float"}


@dataclass(frozen=True, slots=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class YamlDocument:
    """Plain data of one YAML file plus where every value and key starts."""

    file: str
    data: Any
    values: Mapping[Path, Mark] = field(repr=False)
    keys: Mapping[Path, Mark] = field(repr=False)
    prefix: Path = ()

    def within(self, key: str) -> YamlDocument:
        """The document rooted at ``data[key]``; paths stay relative to the new root."""
        return YamlDocument(self.file, self.data[key], self.values, self.keys, (*self.prefix, key))

    def locate(self, path: Path, *, at_key: bool = False) -> Position:
        """Where ``path`` stands (its key when ``at_key``), or its nearest existing parent."""
        full = (*self.prefix, *path)
        if at_key and full in self.keys:
            return _position(self.keys[full])
        for end in range(len(full), -1, -1):
            mark = self.values.get(full[:end])
            if mark is not None:
                return _position(mark)
        return Position(1, 1)

    def diagnostic(
        self, path: Path, message: str, level: Level = Level.ERROR, *, at_key: bool = False
    ) -> Diagnostic:
        position = self.locate(path, at_key=at_key)
        return Diagnostic(self.file, position.line, position.column, path, message, level)


def _position(mark: Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.values: dict[Path, Mark] = {}
        self.keys: dict[Path, Mark] = {}
        self.problems: list[Diagnostic] = []
        self.count = 0
        self.active: set[int] = set()
        # Per document: a constructor memoises every node it builds, so a shared one would keep
        # every scalar of every file ever loaded (~37 KiB a file).
        self.scalars = yaml.constructor.SafeConstructor()

    def problem(self, node: nodes.Node, path: Path, message: str) -> None:
        position = _position(node.start_mark)
        self.problems.append(Diagnostic(self.file, position.line, position.column, path, message))

    def tick(self) -> None:
        """Count one node built or one mapping merged: aliases and merges repeat work."""
        self.count += 1
        if self.count > MAX_NODES:
            raise _TooLarge

    def build(self, node: nodes.Node, path: Path) -> Any:
        self.tick()
        if len(path) > MAX_DEPTH:
            raise _TooDeep(_position(node.start_mark))
        self.values.setdefault(path, node.start_mark)
        if not isinstance(node, nodes.CollectionNode):
            return self.scalar(node, path)
        if node.tag not in _COLLECTION_TAGS:
            self._bad_tag(node, path)
            return None
        if id(node) in self.active:
            raise _RecursiveAlias(node)
        self.active.add(id(node))
        try:
            if isinstance(node, nodes.MappingNode):
                return self.mapping(node, path)
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        finally:
            self.active.discard(id(node))

    def scalar(self, node: nodes.Node, path: Path) -> Any:
        tag = node.tag
        if tag in (_STR, _TIMESTAMP):
            return node.value
        if tag == _BOOL and node.value.lower() not in ("true", "false"):
            return node.value
        if tag in _NUMBERS and ":" in node.value:  # YAML 1.1 base 60: a string in YAML 1.2
            return node.value
        if tag in _NUMBERS and len(node.value) > MAX_NUMBER:
            self.problem(
                node,
                path,
                f"a number of {len(node.value)} characters: at most {MAX_NUMBER} "
                "(quote it to keep it as text)",
            )
            return None
        if tag in _CONSTRUCTED_TAGS:
            try:
                return self.scalars.construct_object(node)
            except (ValueError, IndexError):  # an explicit !!int or !!float on text, or on nothing
                kind = str(tag).replace(_TAG, "!!")
                self.problem(node, path, f"{kind} {node.value!r} is not a number")
                return None
        self._bad_tag(node, path)
        return None

    def _bad_tag(self, node: nodes.Node, path: Path) -> None:
        tag = str(node.tag).replace(_TAG, "!!")
        message = f"tag {tag!r} is not allowed: loop files hold plain data (remove the tag)"
        self.problem(node, path, message)

    def mapping(self, node: nodes.MappingNode, path: Path) -> dict[str, Any]:
        self.tick()
        result: dict[str, Any] = {}
        merges: list[nodes.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merges.extend(self._merge_sources(value_node, path))
                continue
            if not isinstance(key_node, nodes.ScalarNode):
                self.problem(key_node, path, "a key must be a plain string, not a list or mapping")
                continue
            key = str(key_node.value)
            child = (*path, key)
            if key in result:
                first = _position(self.keys[child])
                message = f"duplicate key '{shown_key(key)}' (first at line {first.line})"
                self.problem(key_node, child, message)
                continue
            self.keys[child] = key_node.start_mark
            result[key] = self.build(value_node, child)
        for source in merges:
            merged = self.mapping(source, path) if isinstance(source, nodes.MappingNode) else {}
            for key, value in merged.items():
                result.setdefault(key, value)
        return result

    def _merge_sources(self, node: nodes.Node, path: Path) -> Iterator[nodes.Node]:
        candidates = node.value if isinstance(node, nodes.SequenceNode) else [node]
        for candidate in candidates:
            if isinstance(candidate, nodes.MappingNode):
                yield candidate
            else:
                self.problem(candidate, path, "'<<' merges only mappings (write <<: *anchor)")


class _RecursiveAlias(Exception):
    def __init__(self, node: nodes.Node) -> None:
        self.node = node


class _TooLarge(Exception):
    pass


class _TooDeep(Exception):
    def __init__(self, position: Position) -> None:
        self.position = position


_VALUES = (yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.ScalarEvent, yaml.AliasEvent)


def _check_shape(text: str) -> None:
    """Refuse a document nested deeper than ``MAX_DEPTH``, from its text, or holding more than
    ``MAX_NODES`` values, from its events (before they are composed) when its size allows it;
    values first, which bounds the text read for depth, unless libyaml finds it too deep."""
    if len(text) >= _SAFE_SIZE:
        try:
            _count_values(text)
        except yaml.YAMLError:
            _check_depth(text)
            raise
    _check_depth(text)


def _check_depth(text: str) -> None:
    if (at := too_deep(text, MAX_DEPTH)) is not None:
        raise _TooDeep(Position(*at))


def _count_values(text: str) -> None:
    count = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, _VALUES):
            count += 1
            if count > MAX_NODES:
                raise _TooLarge


def _syntax_error(file: str, exc: yaml.YAMLError) -> ContractError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if isinstance(exc, yaml.composer.ComposerError) and "single document" in str(context):
        message = "a file holds one YAML document: move the others (after '---') to their own files"
    else:
        started = ""
        if context_mark is not None and mark is not None and context_mark.line != mark.line:
            started = f" started at line {context_mark.line + 1}, column {context_mark.column + 1}"
        message = f"invalid YAML: {problem}" + (f" ({context}{started})" if context else "")
    diagnostic = Diagnostic(file, line, column, (), message)
    return ContractError(diagnostic.format(), [diagnostic])


def _failure(file: str, position: Position, message: str) -> ContractError:
    diagnostic = Diagnostic(file, position.line, position.column, (), message)
    return ContractError(diagnostic.format(), [diagnostic])


def read_source(path: FilePath, *, name: str | None = None, follow_links: bool = True) -> str:
    """The text of a loop or config file: UTF-8 (a BOM allowed), at most ``MAX_BYTES``; else
    ``ContractError`` saying what is wrong and where (in the file ``name``, by default ``path``).
    Without ``follow_links``, a link found where ``path`` was resolved to is not read."""
    file = name or str(path)
    try:
        with open(path, "rb", opener=None if follow_links else _not_a_link) as stream:
            raw = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _failure(file, Position(1, 1), f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise _failure(file, Position(1, 1), _too_big(path.stat().st_size))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"not UTF-8 text (byte {exc.start}): save the file as UTF-8"
        raise _failure(file, Position(line, 1), message) from None


def _not_a_link(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))


def _too_big(size: int) -> str:
    return (
        f"the file is {size / 2**20:.1f} MiB, over the {MAX_BYTES // 2**20} MiB a loop or "
        "config file may hold: move data out of it (params, sources, files)"
    )


def parse_yaml(text: str, file: str) -> YamlDocument:
    """Parse one YAML document; raises ``ContractError`` listing every structural problem."""
    size = len(text.encode())
    if size > MAX_BYTES:
        raise _failure(file, Position(1, 1), _too_big(size))
    builder = _Builder(file)
    try:
        _check_shape(text)
        root = yaml.compose(text, Loader=_Loader)
        data = None if root is None else builder.build(root, ())
    except yaml.YAMLError as exc:
        raise _syntax_error(file, exc) from None
    except _TooDeep as exc:
        message = f"nested more than {MAX_DEPTH} levels deep: flatten the data"
        raise _failure(file, exc.position, message) from None
    except RecursionError:
        message = f"nested more than {MAX_DEPTH} levels deep: flatten the data"
        raise _failure(file, Position(1, 1), message) from None
    except _RecursiveAlias as exc:
        raise _failure(file, _position(exc.node.start_mark), "recursive alias") from None
    except _TooLarge:
        message = (
            f"the document expands to more than {MAX_NODES:,} values (aliases and '<<' merges "
            "counted each time they are used): write less data, or fewer aliases"
        )
        raise _failure(file, Position(1, 1), message) from None
    if builder.problems:
        raise ContractError(builder.problems[0].format(), builder.problems)
    return YamlDocument(file, data, builder.values, builder.keys)
