"""The seven phases, one module each; every phase is ``async (Run, Services) -> PhaseOutput``."""

from loopengine.engine.phases._act import run_act
from loopengine.engine.phases._analyze import run_analyze
from loopengine.engine.phases._base import PhaseOutput, defaults
from loopengine.engine.phases._decide import run_decide
from loopengine.engine.phases._detect import run_detect
from loopengine.engine.phases._learn import run_learn
from loopengine.engine.phases._store import ended, run_store
from loopengine.engine.phases._validate import run_validate

__all__ = [
    "PhaseOutput",
    "defaults",
    "ended",
    "run_act",
    "run_analyze",
    "run_decide",
    "run_detect",
    "run_learn",
    "run_store",
    "run_validate",
]
