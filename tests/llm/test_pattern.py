"""A model's regular expression is sized on its text before ``regex`` compiles it: what it would
unroll to, how deep it nests, how long it is; the few flags that would hide its size are refused.

The sizes are checked against ``regex``'s own parser: compiling copies each repeated item its
minimum count of times, so for every pattern ``regex`` accepts, the size counted on the text is
never under what its parse tree unrolls to."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from regex import _regex_core

from loopengine.llm import MAX_NESTING, MAX_PATTERN, MAX_UNROLLED, check_pattern, pattern_size


@pytest.mark.parametrize(
    "pattern",
    [
        "water",
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"(?P<word>\w+)\s+(?P=word)",
        r"^\s*def\s+\w+\(.*\):$",
        "TODO|FIXME|XXX",
        "[[:alpha:]]+[[:^digit:]]",
        r"x{9000}",
        r"x{0,4000000000}",
        r".{0,5000}\d+",
        r"(?i)(?s:a.b)(?m)^c$",
        r"(?#a comment)x",
        "(?:a|b)*?c++",
    ],
)
def test_ordinary_patterns_pass(pattern: str) -> None:
    check_pattern(pattern)
    regex.compile(pattern, regex.V0)


@pytest.mark.parametrize(
    "pattern",
    [
        "x{999999999}",
        "x{10000000}",
        "x{10001}",
        "x{1000000,}",
        "x{1000000,2000000}",
        "x{10001}?",
        "x{10001}+",
        "(x{1000}){1000}",
        "(?:(?:(?:x{10}){10}){10}){11}",
        r"[\x00-\U0010ffff]{10000}",
        r"\R{5000}",
        "(?:x{100000}){e<=1}",
        "(?P<name>x{2000})(?P>name)(?P>name)(?P>name)(?P>name)",
        "(x{2500})(?1)(?1)(?1)",
        "x(?i){100000}",
        "x(?#no item){100000}",
        "(?:x{100}){0}" + "y{10000}",
    ],
)
def test_what_would_unroll_too_far_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match=f"at most {MAX_UNROLLED:,}"):
        check_pattern(pattern)


@pytest.mark.parametrize(
    "item", ["x", r"\R", r"(?:\X)", r"\p{L}", "(?:ab|cd)", r"(?:(x))", r"(?:\d+\.?)", "[^a-z]"]
)
def test_the_largest_pattern_admitted_compiles_in_a_few_mib(item: str) -> None:
    pattern = f"{item}{{{(MAX_UNROLLED - 1) // pattern_size(item).unrolled}}}"
    check_pattern(pattern)
    tracemalloc.start()
    try:
        regex.compile(pattern, regex.IGNORECASE | regex.V0, cache_pattern=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024**2


def test_a_long_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match=f"has 1,001 characters \\(at most {MAX_PATTERN:,}\\)"):
        check_pattern("x" * (MAX_PATTERN + 1))


def test_deep_nesting_is_refused() -> None:
    depth = MAX_NESTING + 1
    with pytest.raises(ValueError, match=f"nests groups {depth} deep \\(at most {MAX_NESTING}\\)"):
        check_pattern("(" * depth + "x" + ")" * depth)


def test_nesting_counts_every_kind_of_group() -> None:
    assert pattern_size("(?:(?=(?P<a>(?>(?i:x)))))").nesting == 5


@pytest.mark.parametrize(
    ("pattern", "flag"),
    [
        ("(?x)x{1 000 000}", "'x' (verbose)"),
        ("(?x:x{1#\n000000})", "'x' (verbose)"),
        ("(?i-x)a", "'x' (verbose)"),
        (r"(?f)[\x00-\U0010ffff]{2000}", "'f' (full case folding)"),
        ("(?V1)[[a-z]--[aeiou]]", "'V1' (version 1)"),
    ],
)
def test_flags_that_would_hide_the_size_are_refused(pattern: str, flag: str) -> None:
    with pytest.raises(ValueError, match=f"the inline flag {regex.escape(flag)} is not supported"):
        check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["[[]", "[a[b]", "[[:a:b:](x{1000}){1000}]"])
def test_a_bracket_inside_a_class_is_refused_unless_posix(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"a '\[' inside a character class"):
        check_pattern(pattern)


_TRICKY = [
    "[)]", "[^])]", r"[\])]", "[]()]", "[[:alpha:])(]", "[(?#]", "[{3}]", "(?#)", r"(?#\))",
    "(?#(()", r"(?#\(\))", "(?i)", "(?-i)", "(?s)", r"\)", r"\(", r"\{", "{", "}", "{x}", "{}",
    r"\N{LATIN SMALL LETTER A}", r"\p{L}", "#", "(?:)", r"\R",
]  # fmt: skip
"""Text that misleads: delimiters that are not delimiters, what is not an item, an escape that
stands for more than its text."""


@pytest.mark.parametrize("tricky", _TRICKY)
@pytest.mark.parametrize(
    "template", ["(x{50}T){50}", "(Tx{50}){50}", "(x{50})T{50}", "(?:x{50}|T){50}", "T(x{50}){50}"]
)
def test_delimiters_that_are_not_delimiters_hide_no_repeat(template: str, tricky: str) -> None:
    pattern = template.replace("T", tricky)
    tree = _parsed(pattern)
    assert tree is not None, f"regex refuses {pattern!r}"
    assert pattern_size(pattern).unrolled >= _unrolled(tree)


_ATOMS = st.sampled_from(["x", "ab", ".", r"\d", r"\pL", "(?R)", *_TRICKY])
_QUANTIFIERS = st.sampled_from(
    ["*", "+", "?", "{7}", "{3,}", "{,4}", "{0}", "{5,9}", "{11}?", "{13}+", "{e<=1}", "{,}"]
)
_OPENERS = st.sampled_from(["(", "(?:", "(?P<g>", "(?=", "(?<=", "(?>", "(?i:", "(?|"])


def _compose(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, _QUANTIFIERS).map("".join),
        st.lists(inner, min_size=2, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        st.tuples(_OPENERS, inner, st.just(")"), _QUANTIFIERS).map("".join),
    )


_PATTERNS = st.one_of(
    st.recursive(_ATOMS, _compose, max_leaves=16),
    st.text(alphabet="x()[]{}|\\?*+,:^-#=<>!PRig0123", max_size=24),
)


@settings(max_examples=1000, deadline=None)
@given(_PATTERNS)
def test_the_size_is_never_under_what_regex_unrolls(pattern: str) -> None:
    try:
        size = pattern_size(pattern)
    except ValueError:
        return
    tree = _parsed(pattern)
    if tree is not None:
        assert size.unrolled >= _multiplier(tree)
        assert size.unrolled >= _unrolled(tree)
        assert size.nesting >= _nesting(tree)


def _parsed(pattern: str) -> Any:
    """``regex``'s parse tree of ``pattern`` (as ``regex.compile`` parses it), None if refused."""
    flags = regex.IGNORECASE | regex.V0
    while True:
        source = _regex_core.Source(pattern)
        info = _regex_core.Info(flags, source.char_type, {})
        info.guess_encoding = regex.UNICODE
        try:
            tree = _regex_core._parse_pattern(source, info)
        except _regex_core._UnscopedFlagSet:
            flags = info.global_flags
            continue
        except (regex.error, ValueError, RecursionError):
            return None
        return tree if source.at_end() else None


def _children(node: Any) -> list[Any]:
    found = []
    for value in vars(node).values():
        values = value if isinstance(value, list | tuple) else [value]
        found += [v for v in values if isinstance(v, _regex_core.RegexBase)]
    return found


def _count(node: Any) -> int:
    return max(node.min_count, 1) if isinstance(node, _regex_core.GreedyRepeat) else 1


def _leaf(node: Any) -> int:
    return 0 if isinstance(node, _regex_core.Sequence) else 1


def _unrolled(node: Any) -> int:
    """Leaves of the tree, each once per copy compiling makes of it."""
    children = _children(node)
    inner = sum(_unrolled(child) for child in children) if children else _leaf(node)
    return _count(node) * inner


def _multiplier(node: Any) -> int:
    """The most copies of any one leaf."""
    children = _children(node)
    inner = max(_multiplier(child) for child in children) if children else _leaf(node)
    return _count(node) * inner


def _nesting(node: Any) -> int:
    inner = max((_nesting(child) for child in _children(node)), default=0)
    return inner + isinstance(node, _regex_core.Group)
