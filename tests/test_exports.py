"""The public surface: ``loopengine.__all__`` is complete, sorted, and loads lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import loopengine


def test_all_is_sorted() -> None:
    assert loopengine.__all__ == sorted(loopengine.__all__)


def test_every_exported_name_resolves() -> None:
    for name in loopengine.__all__:
        assert getattr(loopengine, name) is not None, name


def test_public_names_of_the_plugin_api_are_exported() -> None:
    assert {"skill", "tool", "SkillContext", "SkillOutput", "LoopEngineError"} <= set(
        loopengine.__all__
    )


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="not_a_name"):
        loopengine.not_a_name  # noqa: B018


def test_importing_the_package_does_not_import_pydantic() -> None:
    code = "import sys, loopengine, loopengine.cli; print('pydantic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_all_lists_exactly_the_lazy_exports() -> None:
    assert set(loopengine.__all__) == {*loopengine._EXPORTS, "__version__"}


def test_subpackages_declare_sorted_all() -> None:
    from loopengine import contract, expr, skills, triggers

    for package in (contract, expr, skills, triggers):
        assert package.__all__ == sorted(package.__all__), package.__name__
        assert all(hasattr(package, name) for name in package.__all__), package.__name__
