"""What the file tools never see, whatever their root and however a path is written: the config
file, the store's folder (or files), ``.loopengine/`` and every hidden file or folder. Each tool
that touches files is tried with the paths a model could use to reach them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loopengine.app import private_paths
from loopengine.builtins import builtin_tools, offered_tools
from loopengine.contract import Config
from loopengine.llm import Toolbox
from loopengine.skills import Registry

pytestmark = pytest.mark.anyio

SECRET = "s3cret-value"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A workspace: its config and its store (in ``state/``) hold the secret, as do hidden files;
    ``docs/`` and ``facts.txt`` are open; links lead to each private place."""
    base = tmp_path / "workspace"
    for path in (
        "loopengine.yaml",
        "state/store.db",
        "state/store.db-wal",
        "state/backup.sql",
        ".loopengine/artifacts/run.json",
        ".env",
        ".git/config",
        "docs/.hidden",
    ):
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_text(f"password: {SECRET}\n")
    (base / "docs" / "notes.md").write_text("public notes\n")
    (base / "facts.txt").write_text("public facts\n")
    (base / "config-link").symlink_to(base / "loopengine.yaml")
    (base / "docs" / "state-link").symlink_to(base / "state")
    (base / "hidden-link").symlink_to(base / ".loopengine")
    os.link(base / "loopengine.yaml", base / "LoopEngine.YAML")
    return base


def _toolbox(base: Path, root: Path) -> Toolbox:
    private = private_paths(base, base / "loopengine.yaml", base / "state" / "store.db")
    return Toolbox(builtin_tools(root, None, private=private, base=base))


@pytest.fixture
def toolbox(base: Path) -> Toolbox:
    return _toolbox(base, base)


async def _run(toolbox: Toolbox, name: str, **arguments: Any) -> Any:
    outcome = await toolbox.run(name, arguments)
    assert SECRET not in outcome.content()
    return outcome


PRIVATE_FILES = [
    "loopengine.yaml",
    "./loopengine.yaml",
    "docs/../loopengine.yaml",
    "docs//..//loopengine.yaml",
    "config-link",
    "LoopEngine.YAML",
    "state/store.db",
    "state/store.db-wal",
    "state/backup.sql",
    "docs/state-link/backup.sql",
    ".loopengine/artifacts/run.json",
    "hidden-link/artifacts/run.json",
    ".env",
    "docs/../.env",
    ".git/config",
    "docs/.hidden",
]
"""The config, the store's files and folder, artifacts and hidden files: as named, through
``..``, a link (to the file or a folder above it) and another name of the same file (a hard link,
as another case is on a file system that ignores case)."""


@pytest.mark.parametrize("path", PRIVATE_FILES)
async def test_read_file_refuses_what_is_private(toolbox: Toolbox, path: str) -> None:
    outcome = await _run(toolbox, "read_file", path=path)
    assert outcome.error == (
        f"PermissionError: {path!r} is not open to tools: "
        "hidden files, the config and the store never are"
    )


async def test_read_file_refuses_an_absolute_path_to_the_config(
    toolbox: Toolbox, base: Path
) -> None:
    outcome = await _run(toolbox, "read_file", path=str(base / "loopengine.yaml"))
    assert "is not open to tools" in outcome.error


@pytest.mark.parametrize("path", ["state", "docs/state-link", ".loopengine", "hidden-link", ".git"])
@pytest.mark.parametrize("tool", ["list_dir", "search_files"])
async def test_private_folders_are_neither_listed_nor_searched(
    toolbox: Toolbox, tool: str, path: str
) -> None:
    arguments = {"path": path} if tool == "list_dir" else {"path": path, "pattern": "password"}
    outcome = await _run(toolbox, tool, **arguments)
    assert "is not open to tools" in outcome.error


async def test_a_listing_names_only_what_is_open(toolbox: Toolbox) -> None:
    listed = (await _run(toolbox, "list_dir", path=".")).result
    assert [entry["name"] for entry in listed] == ["docs", "facts.txt"]


async def test_a_listing_of_a_folder_leaves_out_links_to_private_places(toolbox: Toolbox) -> None:
    listed = (await _run(toolbox, "list_dir", path="docs")).result
    assert [entry["name"] for entry in listed] == ["notes.md"]


async def test_a_search_finds_only_what_is_open(toolbox: Toolbox) -> None:
    found = (await _run(toolbox, "search_files", pattern="password|public")).result
    assert [match["file"] for match in found] == ["docs/notes.md", "facts.txt"]


@pytest.mark.parametrize("root", ["state", ".loopengine", ".loopengine/artifacts", ".git"])
async def test_a_root_inside_a_private_or_hidden_folder_opens_nothing(
    base: Path, root: str
) -> None:
    toolbox = _toolbox(base, base / root)
    for name, arguments in (
        ("list_dir", {"path": "."}),
        ("search_files", {"pattern": "password"}),
        ("read_file", {"path": "config" if root == ".git" else "backup.sql"}),
    ):
        outcome = await _run(toolbox, name, **arguments)
        assert "is not open to tools" in outcome.error


async def test_a_root_above_the_workspace_still_hides_its_config_and_store(base: Path) -> None:
    toolbox = _toolbox(base, base.parent)
    listed = (await _run(toolbox, "list_dir", path="workspace")).result
    assert [entry["name"] for entry in listed] == ["docs", "facts.txt"]
    outcome = await _run(toolbox, "read_file", path="workspace/loopengine.yaml")
    assert "is not open to tools" in outcome.error
    found = (await _run(toolbox, "search_files", pattern="password|public")).result
    assert [match["file"] for match in found] == ["workspace/docs/notes.md", "workspace/facts.txt"]


async def test_a_file_of_the_store_created_later_is_private_too(
    toolbox: Toolbox, base: Path
) -> None:
    (base / "state" / "store.db-journal").write_text(SECRET)
    (base / "journal-link").symlink_to(base / "state" / "store.db-journal")
    outcome = await _run(toolbox, "read_file", path="journal-link")
    assert "is not open to tools" in outcome.error


async def test_a_store_beside_the_config_hides_its_files_not_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "store.db").write_text(SECRET)
    (tmp_path / "facts.txt").write_text("public facts\n")
    private = private_paths(tmp_path, None, tmp_path / "store.db")
    toolbox = Toolbox(builtin_tools(tmp_path, None, private=private, base=tmp_path))
    listed = (await _run(toolbox, "list_dir", path=".")).result
    assert [entry["name"] for entry in listed] == ["facts.txt"]


async def test_the_offered_tools_hide_the_private_paths_they_are_given(base: Path) -> None:
    private = private_paths(base, base / "loopengine.yaml", None)
    toolbox = Toolbox(offered_tools(Config(), base, Registry(), private))
    outcome = await _run(toolbox, "read_file", path="loopengine.yaml")
    assert "is not open to tools" in outcome.error
