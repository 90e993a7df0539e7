"""Plugins: ``.py`` files, modules and installed entry points fill a registry."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopengine.errors import ContractError
from loopengine.skills import Registry, load_entry_points, load_plugin, looks_like_file

PLUGIN = """\
from loopengine import skill, tool

@skill("{name}")
def run(ctx, n: int = 1):
    return {{"n": n}}

@tool
def helper(term: str) -> str:
    \"\"\"Look something up.\"\"\"
    return term
"""


@pytest.mark.parametrize(
    ("spec", "is_file"),
    [("./tools.py", True), ("tools.py", True), ("pkg/tools", True), ("my_skills", False)],
)
def test_paths_and_module_names_are_told_apart(spec: str, is_file: bool) -> None:
    assert looks_like_file(spec) is is_file


def test_a_file_plugin_registers_its_skills_and_tools(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(PLUGIN.format(name="from_file"))
    registry = Registry()
    assert load_plugin("./tools.py", tmp_path, registry) == 2
    assert registry.skill("from_file").param_names == {"n"}
    assert registry.tool("helper").description == "Look something up."


def test_loading_a_file_plugin_again_is_harmless(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(PLUGIN.format(name="twice"))
    registry = Registry()
    load_plugin("tools.py", tmp_path, registry)
    load_plugin("tools.py", tmp_path, registry)
    assert [d.name for d in registry.skills] == ["twice"]


def test_a_plugin_without_definitions_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ContractError, match="defines no @skill or @tool"):
        load_plugin("empty.py", tmp_path, Registry())


def test_an_import_error_inside_a_plugin_names_the_missing_module(tmp_path: Path) -> None:
    (tmp_path / "needs.py").write_text("import not_installed_anywhere\n")
    with pytest.raises(ContractError, match="No module named 'not_installed_anywhere'"):
        load_plugin("needs.py", tmp_path, Registry())


def test_entry_points_are_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ep_plugin_under_test.py").write_text(PLUGIN.format(name="from_entry_point"))
    dist = tmp_path / "ep_plugin_under_test-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ep-plugin-under-test\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[loopengine.plugins]\nunder_test = ep_plugin_under_test\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    assert load_entry_points(registry) == 2
    assert registry.find_skill("from_entry_point") is not None
    monkeypatch.delitem(sys.modules, "ep_plugin_under_test")
