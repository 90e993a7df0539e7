"""Loop contracts: models, YAML loading with positions, JSON Schemas and semantic checks."""

from loopengine.contract._config import Config
from loopengine.contract._diagnostics import Diagnostic, Level
from loopengine.contract._loader import LoadReport, Loop, LoopLoader, find_loop_files
from loopengine.contract._loop import LoopSpec
from loopengine.contract._schema import config_schema, loop_schema

__all__ = [
    "Config",
    "Diagnostic",
    "Level",
    "LoadReport",
    "Loop",
    "LoopLoader",
    "LoopSpec",
    "config_schema",
    "find_loop_files",
    "loop_schema",
]
