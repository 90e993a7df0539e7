"""The expression language: JMESPath with numbers, percentages, durations and ``${ }`` templates."""

from loopengine.expr.durations import parse_duration
from loopengine.expr.expression import Expression, compile_expression, truthy
from loopengine.expr.template import Template, compile_template

__all__ = [
    "Expression",
    "Template",
    "compile_expression",
    "compile_template",
    "parse_duration",
    "truthy",
]
