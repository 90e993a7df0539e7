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
