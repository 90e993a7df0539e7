"""Safe YAML loading that remembers where every key and value stands.

Only plain data is built: tags that would run code (``!!python/...``) are errors, keys are kept as
written (``on:`` stays the string ``on``), booleans are YAML 1.2's ``true``/``false`` only, and a
document whose aliases expand past ``MAX_NODES`` nodes (a "billion laughs") is refused before it
is built.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml import nodes

from loopengine.contract.diagnostics import Diagnostic, Level, Path
from loopengine.errors import ContractError

__all__ = ["MAX_NODES", "Position", "YamlDocument", "parse_yaml"]

MAX_NODES = 100_000

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_SCALARS = yaml.constructor.SafeConstructor()
_PLAIN_TAGS = {_TAG + name for name in ("null", "bool", "int", "float", "str")}
_COLLECTION_TAGS = {_TAG + "map", _TAG + "seq"}


@dataclass(frozen=True, slots=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True)
class YamlDocument:
    """Plain data of one YAML file plus the 1-based position of every value and key."""

    file: str
    data: Any
    values: Mapping[Path, Position] = field(repr=False)
    keys: Mapping[Path, Position] = field(repr=False)
    prefix: Path = ()

    def within(self, key: str) -> YamlDocument:
        """The document rooted at ``data[key]``; paths stay relative to the new root."""
        return YamlDocument(self.file, self.data[key], self.values, self.keys, (*self.prefix, key))

    def locate(self, path: Path, *, at_key: bool = False) -> Position:
        """Where ``path`` stands (its key when ``at_key``), or its nearest existing parent."""
        full = (*self.prefix, *path)
        if at_key and full in self.keys:
            return self.keys[full]
        for end in range(len(full), -1, -1):
            position = self.values.get(full[:end])
            if position is not None:
                return position
        return Position(1, 1)

    def diagnostic(
        self, path: Path, message: str, level: Level = Level.ERROR, *, at_key: bool = False
    ) -> Diagnostic:
        position = self.locate(path, at_key=at_key)
        return Diagnostic(self.file, position.line, position.column, path, message, level)


def _position(node: nodes.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.problems: list[Diagnostic] = []

    def problem(self, node: nodes.Node, path: Path, message: str) -> None:
        position = _position(node)
        self.problems.append(Diagnostic(self.file, position.line, position.column, path, message))

    def build(self, node: nodes.Node, path: Path) -> Any:
        self.values.setdefault(path, _position(node))
        if isinstance(node, nodes.CollectionNode) and node.tag not in _COLLECTION_TAGS:
            self._bad_tag(node, path)
            return None
        if isinstance(node, nodes.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, nodes.SequenceNode):
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        return self.scalar(node, path)

    def scalar(self, node: nodes.Node, path: Path) -> Any:
        tag = node.tag
        if tag == _TAG + "bool" and node.value.lower() not in ("true", "false"):
            return node.value
        if tag in _PLAIN_TAGS:
            return _SCALARS.construct_object(node)
        if tag == _TAG + "timestamp":
            return node.value
        self._bad_tag(node, path)
        return None

    def _bad_tag(self, node: nodes.Node, path: Path) -> None:
        tag = str(node.tag).replace(_TAG, "!!")
        message = f"tag {tag!r} is not allowed: loop files hold plain data (remove the tag)"
        self.problem(node, path, message)

    def mapping(self, node: nodes.MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merges: list[nodes.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                merges.extend(self._merge_sources(value_node, path))
                continue
            if not isinstance(key_node, nodes.ScalarNode):
                self.problem(key_node, path, "a key must be a plain string, not a list or mapping")
                continue
            key = str(key_node.value)
            if key in result:
                first = self.keys[(*path, key)]
                self.problem(
                    key_node, (*path, key), f"duplicate key '{key}' (first at line {first.line})"
                )
                continue
            self.keys[(*path, key)] = _position(key_node)
            result[key] = self.build(value_node, (*path, key))
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


def _expanded_size(root: nodes.Node) -> int:
    """Nodes the document has once every alias is expanded, computed without expanding."""
    sizes: dict[int, int] = {}
    order: list[nodes.Node] = []
    stack: list[tuple[nodes.Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, done = stack.pop()
        if done:
            active.discard(id(node))
            order.append(node)
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[id(node)] > MAX_NODES:
                return sizes[id(node)]
            continue
        if id(node) in sizes:
            continue
        if id(node) in active:
            raise _RecursiveAlias(node)
        active.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: nodes.Node) -> Iterator[nodes.Node]:
    if isinstance(node, nodes.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, nodes.SequenceNode):
        yield from node.value


class _RecursiveAlias(Exception):
    def __init__(self, node: nodes.Node) -> None:
        self.node = node


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


def parse_yaml(text: str, file: str) -> YamlDocument:
    """Parse one YAML document; raises ``ContractError`` listing every structural problem."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise _syntax_error(file, exc) from None
    except RecursionError:
        diagnostic = Diagnostic(file, 1, 1, (), "YAML nested too deeply")
        raise ContractError(diagnostic.format(), [diagnostic]) from None
    if root is None:
        return YamlDocument(file, None, {}, {})
    try:
        size = _expanded_size(root)
    except _RecursiveAlias as exc:
        position = _position(exc.node)
        diagnostic = Diagnostic(file, position.line, position.column, (), "recursive alias")
        raise ContractError(diagnostic.format(), [diagnostic]) from None
    if size > MAX_NODES:
        diagnostic = Diagnostic(
            file,
            1,
            1,
            (),
            f"aliases expand this document past {MAX_NODES:,} nodes (an alias bomb?): "
            "write the data out or use fewer aliases",
        )
        raise ContractError(diagnostic.format(), [diagnostic])
    builder = _Builder(file)
    data = builder.build(root, ())
    if builder.problems:
        raise ContractError(builder.problems[0].format(), builder.problems)
    return YamlDocument(file, data, builder.values, builder.keys)
