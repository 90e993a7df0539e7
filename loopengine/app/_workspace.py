"""The workspace a command runs in: its settings, and the registry of built-in and plugin skills."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loopengine.app._settings import Settings, read_settings
from loopengine.builtins import builtin_registry
from loopengine.contract.checks import Env
from loopengine.errors import ContractError
from loopengine.skills import Registry, load_entry_points, load_plugin

if TYPE_CHECKING:
    from loopengine.contract import Config

__all__ = ["Workspace", "load_workspace"]


@dataclass(frozen=True, slots=True)
class Workspace:
    """The settings and the registry of built-in and plugin skills."""

    settings: Settings
    registry: Registry

    @property
    def config(self) -> Config:
        return self.settings.config

    @property
    def base(self) -> Path:
        return self.settings.base

    @property
    def env(self) -> Env:
        return Env(self.registry, self.settings.storage_names, os.environ)


def load_workspace(config_file: Path | None = None, *, entry_points: bool = True) -> Workspace:
    """Read the config (defaults when there is none) and load built-in and plugin skills."""
    settings = read_settings(config_file)
    base, document = settings.base, settings.document
    registry = builtin_registry()
    if entry_points:
        load_entry_points(registry)
    for index, spec in enumerate(settings.plugins):
        try:
            load_plugin(spec, base, registry)
        except ContractError as exc:
            if document is None:
                raise
            diagnostic = document.diagnostic(("plugins", index), str(exc))
            raise ContractError(diagnostic.format(), [diagnostic]) from exc
    return Workspace(settings, registry)
