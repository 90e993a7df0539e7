"""Shared fixtures: the seed example, a loader with its plugin, and a helper to load YAML text;
no test leaves a process behind (tests/processes.py)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import LoadReport, LoopLoader
from loopengine.contract.checks import Env
from loopengine.skills import Registry, load_plugin

pytest_plugins = ["pytester", "tests.processes", "tests.postgres"]

ROOT = Path(__file__).resolve().parent.parent
SEED_DIR = ROOT / "examples" / "seo_audit"
SEED_LOOP = SEED_DIR / "seo_audit_loop.yaml"


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as the CLI does."""
    return "asyncio"


@pytest.fixture(scope="session")
def seed_registry() -> Registry:
    registry = builtin_registry()
    load_plugin("./seo_skills.py", SEED_DIR, registry)
    return registry


@pytest.fixture(scope="session")
def loader(seed_registry: Registry) -> LoopLoader:
    return LoopLoader(Env(seed_registry, frozenset({"supabase", "redis"})))


@pytest.fixture
def load(loader: LoopLoader) -> Callable[[str], LoadReport]:
    def load_text(text: str) -> LoadReport:
        return loader.load_text(textwrap.dedent(text), "loop.yaml")

    return load_text


MINIMAL = """\
id: minimal
trigger: {type: manual}
"""
