"""Compiled expressions: parsed once at load, evaluated on the hot path with one interpreter."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jmespath import exceptions as jp_errors
from jmespath import visitor
from jmespath.parser import Parser

from loopengine._suggestions import hint
from loopengine.errors import ExpressionError
from loopengine.expr._functions import LoopFunctions, arity
from loopengine.expr._rewrite import Rewritten, rewrite

__all__ = ["Expression", "compile_expression", "truthy"]

_INTERPRETER = visitor.TreeInterpreter(visitor.Options(custom_functions=LoopFunctions()))


def truthy(value: Any) -> bool:
    """JMESPath truthiness: false, null and empty strings, lists and objects are false."""
    return not (value is None or value is False or value in ("", [], {}))


@dataclass(frozen=True, slots=True, eq=False)
class Expression:
    """An author's expression, compiled; ``evaluate`` only ever raises ``ExpressionError``."""

    source: str
    jmespath: str
    _ast: Any

    def evaluate(self, data: Any) -> Any:
        """The expression's value over ``data`` (names that resolve nowhere are null)."""
        try:
            return _INTERPRETER.visit(self._ast, data)
        except ExpressionError:
            raise
        except jp_errors.JMESPathError as exc:
            raise ExpressionError(f"{self.source!r}: {_first_line(exc)}", self.source) from None
        except RecursionError:
            raise ExpressionError(f"{self.source!r}: data nested too deeply", self.source) from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExpressionError(f"{self.source!r}: {exc}", self.source) from None

    def holds(self, data: Any) -> bool:
        """Whether the expression is true over ``data`` (JMESPath truthiness)."""
        return truthy(self.evaluate(data))

    def reads(self, namespace: str) -> frozenset[str]:
        """The names this expression reads as ``namespace.NAME`` from the root of its data
        (not those read relative to a projection's items, a pipe or an ``&`` reference)."""
        return frozenset(_reads(self._ast, namespace))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


_LEFT_ONLY = frozenset(
    {"index_expression", "projection", "value_projection", "filter_projection", "flatten", "pipe"}
)
"""Nodes whose children after the first read what the first one gives, not the root."""


def _heads(node: dict[str, Any]) -> Iterator[str]:
    """The names ``node`` reads first from the value it is applied to."""
    kind = node["type"]
    if kind == "field":
        yield node["value"]
    elif kind in _LEFT_ONLY or kind == "subexpression":
        yield from _heads(node["children"][0])
    elif kind in ("multi_select_list", "multi_select_dict", "key_val_pair"):
        for child in node["children"]:
            yield from _heads(child)


def _reads(node: dict[str, Any], namespace: str) -> Iterator[str]:
    kind = node["type"]
    children = node.get("children", [])
    if kind == "subexpression":
        chain = children[1:] if children[0]["type"] == "current" else children
        head = chain[0]
        if len(chain) > 1 and head["type"] == "field" and head["value"] == namespace:
            yield from _heads(chain[1])
        yield from _reads(children[0], namespace)
    elif kind in _LEFT_ONLY:
        yield from _reads(children[0], namespace)
    elif kind != "expref":
        for child in children:
            if isinstance(child, dict):
                yield from _reads(child, namespace)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _parse_error(
    source: str, rewritten: Rewritten, exc: jp_errors.JMESPathError
) -> ExpressionError:
    position = getattr(exc, "lex_position", None)
    if position is None:
        position = getattr(exc, "lexer_position", None)
    if isinstance(exc, jp_errors.EmptyExpressionError) or not source.strip():
        return ExpressionError("empty expression", source, 0)
    if isinstance(exc, jp_errors.IncompleteExpressionError):
        return ExpressionError(f"incomplete expression {source!r}", source, len(source))
    if isinstance(exc, jp_errors.LexerError):
        message = f"invalid expression {source!r}: {exc.message}"
    else:
        token = getattr(exc, "token_value", "")
        found = f"{token!r}" if token else "end of expression"
        message = f"invalid expression {source!r}: unexpected {found}"
    if isinstance(position, int):
        column = rewritten.source_column(position)
        message += f" at column {column + 1}{_operator_hint(source, column)}"
        return ExpressionError(message, source, column)
    return ExpressionError(message, source)


_QUOTED = re.compile(r"'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`|\"(?:\\.|[^\"\\])*\"")
_WORDS = re.compile(r"(?<![\w.])(and|or|not)(?=\s)")
_OPERATORS = {"and": "&&", "or": "||", "not": "!"}


def _operator_hint(source: str, column: int) -> str:
    """``; use && (JMESPath)`` when an ``and``, ``or`` or ``not`` written as a word (outside
    quotes) comes at or before the error's column, else ''."""
    unquoted = _QUOTED.sub(lambda quoted: " " * len(quoted.group()), source)
    word = next((m.group(1) for m in _WORDS.finditer(unquoted) if m.start() <= column), None)
    return f"; use {_OPERATORS[word]} (JMESPath)" if word else ""


def _check_functions(node: Any, source: str) -> None:
    if node.get("type") == "function_expression":
        name = node["value"]
        spec = arity(name)
        if spec is None:
            known = hint(name, LoopFunctions.FUNCTION_TABLE)
            raise ExpressionError(f"unknown function {name}() in {source!r}; {known}", source)
        count, variadic = spec
        given = len(node["children"])
        if given < count or (given > count and not variadic):
            plural = "" if count == 1 else "s"
            more = " or more" if variadic else ""
            raise ExpressionError(
                f"{name}() takes {count}{more} argument{plural}, {given} given in {source!r}",
                source,
            )
    for child in node.get("children", ()):
        if isinstance(child, dict):
            _check_functions(child, source)


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> Expression:
    """Compile an author's expression; raises ``ExpressionError`` with the column at fault."""
    if not isinstance(source, str):
        raise ExpressionError(f"an expression must be a string, not {type(source).__name__}")
    rewritten = rewrite(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PendingDeprecationWarning)
            ast: Any = Parser().parse(rewritten.text).parsed
    except PendingDeprecationWarning:
        raise ExpressionError(
            f"invalid literal in {source!r}: text between backticks must be JSON; "
            "write 'text' for a string",
            source,
        ) from None
    except jp_errors.JMESPathError as exc:
        raise _parse_error(source, rewritten, exc) from None
    except RecursionError:
        raise ExpressionError(f"expression nested too deeply: {source[:40]!r}…", source) from None
    try:
        _check_functions(ast, source)
    except RecursionError:
        raise ExpressionError(f"expression nested too deeply: {source[:40]!r}…", source) from None
    return Expression(source, rewritten.text, ast)
