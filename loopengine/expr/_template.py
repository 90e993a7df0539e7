"""``${ expr }`` templates in skill params: compiled at load, rendered against the context.

A string that is exactly one reference keeps the value's type, null included; references inside
a longer string are interpolated (text as is, others as JSON), and one that resolves to null there
is an error, never "" (``rm -rf ${ input.dir }/*`` must not become ``rm -rf /*``).
``${ secret.NAME }`` reads the environment at render time and is never stored. ``$${`` writes a
literal ``${``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopengine._secrets import remember
from loopengine.errors import ExpressionError
from loopengine.expr._expression import Expression, compile_expression

__all__ = ["Reference", "Template", "compile_template", "remember_secrets"]

_SECRET = re.compile(r"\s*secret\.([A-Za-z_][A-Za-z0-9_]*)\s*")
_SECRET_MISUSE = re.compile(r"(?<![.\w])secret\s*\.")


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``${ }``: either a compiled expression or the name of a secret."""

    expression: Expression | None = None
    secret: str | None = None

    def resolve(self, context: Any, environ: Mapping[str, str]) -> Any:
        if self.expression is not None:
            return self.expression.evaluate(context)
        assert self.secret is not None
        try:
            value = environ[self.secret]
        except KeyError:
            raise ExpressionError(
                f"secret {self.secret} is not set: export {self.secret}=… in the environment"
            ) from None
        remember(value)
        return value


@dataclass(frozen=True, slots=True)
class _Interpolation:
    parts: tuple[str | Reference, ...]


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(text):
        char = text[i]
        if char in "'`\"":
            end = text.find(char, i + 1)
            while end > 0 and text[end - 1] == "\\":
                end = text.find(char, end + 1)
            if end < 0:
                break
            i = end
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise ExpressionError(f"unclosed '${{' in {text!r}: add the closing '}}'", text, start)


def _reference(inner: str, text: str) -> Reference:
    if secret := _SECRET.fullmatch(inner):
        return Reference(secret=secret.group(1))
    if _SECRET_MISUSE.search(inner):
        raise ExpressionError(
            f"secrets are only read as ${{ secret.NAME }}, not inside expressions: {text!r}", text
        )
    return Reference(expression=compile_expression(inner.strip()))


def _parse_string(text: str) -> str | Reference | _Interpolation:
    if "${" not in text:
        return text
    parts: list[str | Reference] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
        elif text.startswith("${", i):
            end = _closing_brace(text, i + 2)
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(_reference(text[i + 2 : end], text))
            i = end + 1
        else:
            literal.append(text[i])
            i += 1
    if literal:
        parts.append("".join(literal))
    if len(parts) == 1:
        return parts[0]
    return _Interpolation(tuple(parts))


def _compile(value: Any) -> Any:
    if isinstance(value, str):
        return _parse_string(value)
    if isinstance(value, dict):
        return {key: _compile(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_compile(item) for item in value]
    return value


def _as_text(reference: Reference, context: Any, environ: Mapping[str, str]) -> str:
    value = reference.resolve(context, environ)
    if value is None:
        assert reference.expression is not None  # a secret resolves to text or raises
        source = reference.expression.source
        raise ExpressionError(f"missing value for ${{ {source} }} (null inside text)", source)
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def _render(node: Any, context: Any, environ: Mapping[str, str]) -> Any:
    if isinstance(node, Reference):
        return node.resolve(context, environ)
    if isinstance(node, _Interpolation):
        return "".join(
            part if isinstance(part, str) else _as_text(part, context, environ)
            for part in node.parts
        )
    if isinstance(node, dict):
        return {key: _render(item, context, environ) for key, item in node.items()}
    if isinstance(node, list):
        return [_render(item, context, environ) for item in node]
    return node


def _leaves(node: Any) -> Iterator[Any]:
    """What ``node`` holds that is neither a dict nor a list, in order."""
    if isinstance(node, dict):
        for item in node.values():
            yield from _leaves(item)
    elif isinstance(node, list):
        for item in node:
            yield from _leaves(item)
    else:
        yield node


def _references(node: Any) -> Iterator[Reference]:
    for leaf in _leaves(node):
        if isinstance(leaf, Reference):
            yield leaf
        elif isinstance(leaf, _Interpolation):
            yield from (part for part in leaf.parts if isinstance(part, Reference))


@dataclass(frozen=True, slots=True, eq=False)
class Template:
    """A JSON-like value whose strings may hold ``${ }`` references."""

    source: Any
    _compiled: Any
    references: tuple[Reference, ...]
    prepared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per-consumer cache of what a static template becomes (e.g. validated skill params)."""

    @property
    def is_static(self) -> bool:
        """True when the value holds no reference, so it is known at load time."""
        return not self.references

    @property
    def secret_names(self) -> frozenset[str]:
        """Environment variables this template reads as secrets (to redact from records)."""
        return frozenset(ref.secret for ref in self.references if ref.secret is not None)

    def reads(self, namespace: str) -> frozenset[str]:
        """The names the references read as ``namespace.NAME`` from the context's root."""
        expressions = (ref.expression for ref in self.references if ref.expression is not None)
        return frozenset(name for expr in expressions for name in expr.reads(namespace))

    def render(self, context: Any, environ: Mapping[str, str] | None = None) -> Any:
        """The value with every reference filled from ``context`` (and secrets from ``environ``)."""
        return _render(self._compiled, context, os.environ if environ is None else environ)


def compile_template(value: Any) -> Template:
    """Compile every ``${ }`` in ``value``; raises ``ExpressionError`` on the first bad one."""
    compiled = _compile(value)
    return Template(value, compiled, tuple(_references(compiled)))


def _secret_names(document: Any) -> Iterator[str]:
    for leaf in _leaves(document):
        if isinstance(leaf, str) and "secret" in leaf:
            try:
                yield from compile_template(leaf).secret_names
            except ExpressionError:
                continue


def remember_secrets(document: Any, environ: Mapping[str, str]) -> None:
    """Treat as secrets, from now on, the values ``environ`` gives every ``${ secret.NAME }`` in
    the strings of ``document`` (a loop or config file as read): a value sent back as data before
    any of them renders is masked all the same."""
    for name in set(_secret_names(document)):
        if value := environ.get(name):
            remember(value)
