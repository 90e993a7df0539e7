"""``${ }`` templates in skill params."""

from __future__ import annotations

import pytest

from loopengine._secrets import known
from loopengine.errors import ExpressionError
from loopengine.expr import compile_template, remember_secrets

CONTEXT = {"input": {"limit": 5, "tags": ["a", "b"], "name": None}}


def test_a_whole_reference_keeps_its_type() -> None:
    assert compile_template("${ input.limit }").render(CONTEXT) == 5
    assert compile_template("${ input.tags }").render(CONTEXT) == ["a", "b"]


def test_references_inside_text_are_interpolated() -> None:
    assert compile_template("top ${ input.limit } of ${input.tags}").render(CONTEXT) == (
        'top 5 of ["a","b"]'
    )


def test_a_whole_reference_to_null_stays_null() -> None:
    assert compile_template({"name": "${ input.name }"}).render(CONTEXT) == {"name": None}


@pytest.mark.parametrize("reference", ["${ input.name }", "${input.missing}"])
def test_a_null_inside_text_is_a_missing_value_never_empty_text(reference: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_template(f"rm -rf {reference}/*").render(CONTEXT)
    inner = reference.strip("${} ")
    assert str(caught.value) == f"missing value for ${{ {inner} }} (null inside text)"


def test_the_names_a_template_reads() -> None:
    template = compile_template({"a": "${ input.dir }/x", "b": ["${ input.n }"], "c": "$${ d }"})
    assert template.reads("input") == {"dir", "n"}


def test_nested_structures_render_recursively() -> None:
    template = compile_template({"a": ["${ input.limit }", {"b": "x${ input.limit }"}], "c": 1})
    assert template.render(CONTEXT) == {"a": [5, {"b": "x5"}], "c": 1}


def test_static_values_are_known_at_load() -> None:
    template = compile_template({"dry_run": False})
    assert template.is_static
    assert template.render({}) == {"dry_run": False}


def test_dollar_dollar_escapes() -> None:
    assert compile_template("$${ literal }").render({}) == "${ literal }"


def test_braces_inside_the_expression() -> None:
    assert compile_template("${ {n: input.limit} }").render(CONTEXT) == {"n": 5}


def test_secrets_come_from_the_environment() -> None:
    template = compile_template({"auth": "Bearer ${ secret.API_TOKEN }"})
    assert template.secret_names == {"API_TOKEN"}
    assert template.render({}, {"API_TOKEN": "t0k"}) == {"auth": "Bearer t0k"}


def test_a_missing_secret_says_what_to_export() -> None:
    with pytest.raises(ExpressionError, match="export API_TOKEN="):
        compile_template("${ secret.API_TOKEN }").render({}, {})


def test_secrets_cannot_be_used_inside_expressions() -> None:
    with pytest.raises(ExpressionError, match="only read as"):
        compile_template("${ join(',', [secret.A]) }")


def test_an_unclosed_reference_is_an_error() -> None:
    with pytest.raises(ExpressionError, match="unclosed"):
        compile_template("value ${ input.limit")


def test_a_bad_expression_inside_a_reference_is_an_error() -> None:
    with pytest.raises(ExpressionError):
        compile_template("${ a > > b }")


def test_the_secrets_a_document_names_are_known_before_it_renders() -> None:
    document = {
        "params": ["${ secret.T_NAMED }", {"x": "id ${ secret.T_INSIDE } here"}],
        "escaped": "$${ secret.T_ESCAPED }",
        "broken": "${ secret.T_BROKEN ",
        "unset": "${ secret.T_UNSET }",
    }
    values = {f"T_{name}": f"tv-{name.lower()}-4e8a91c2" for name in ("NAMED", "INSIDE", "ESCAPED")}
    remember_secrets(document, values)
    assert {values["T_NAMED"], values["T_INSIDE"]} <= known()
    assert values["T_ESCAPED"] not in known()
