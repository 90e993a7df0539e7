"""The expression language: JMESPath with numbers, percentages, durations and ``${ }`` templates."""

from loopengine.expr._compare import COMPARISONS
from loopengine.expr._durations import parse_duration
from loopengine.expr._expression import Expression, compile_expression, truthy
from loopengine.expr._rewrite import rewrite
from loopengine.expr._template import Template, compile_template, remember_secrets

__all__ = [
    "COMPARISONS",
    "Expression",
    "Template",
    "compile_expression",
    "compile_template",
    "parse_duration",
    "remember_secrets",
    "rewrite",
    "truthy",
]
