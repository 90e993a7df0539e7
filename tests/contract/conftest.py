"""A loader whose registry also holds the contract tests' own plugin skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopengine.contract import LoopLoader
from loopengine.contract.checks import Env
from loopengine.skills import Registry, load_plugin

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="session")
def contract_registry(seed_registry: Registry) -> Registry:
    registry = Registry()
    for definition in seed_registry.skills:
        registry.add(definition)
    load_plugin("./test_skills.py", PLUGINS, registry)
    return registry


@pytest.fixture(scope="session")
def contract_loader(contract_registry: Registry) -> LoopLoader:
    return LoopLoader(Env(contract_registry, frozenset({"supabase", "redis"})))
