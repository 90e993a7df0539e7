"""The public surface: ``loopengine.__all__`` is complete, sorted, and loads lazily."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

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


def _isort_order(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


ROOT = Path(loopengine.__file__).parent


def _subpackages() -> list[str]:
    folders = {path.parent for path in ROOT.rglob("*.py")} - {ROOT}
    return sorted("loopengine." + ".".join(f.relative_to(ROOT).parts) for f in folders)


@pytest.mark.parametrize("name", _subpackages())
def test_every_subpackage_has_a_face_whose_sorted_all_names_resolve(name: str) -> None:
    assert (ROOT.parent / name.replace(".", "/") / "__init__.py").is_file(), "no __init__.py"
    package = importlib.import_module(name)
    assert package.__all__ == sorted(package.__all__, key=_isort_order)
    for exported in package.__all__:
        assert hasattr(package, exported) or importlib.util.find_spec(f"{name}.{exported}"), (
            exported
        )
