"""The pipeline's bounds: refused out of range, and the call bound they allow."""

from __future__ import annotations

import pytest

from loopengine.errors import ContractError
from loopengine.knowledge.corrective import CragSettings


def test_settings_out_of_range_are_refused_naming_each() -> None:
    with pytest.raises(ContractError, match="k must be 1–50, got 0; max_rewrites must be 0–10"):
        CragSettings(k=0, max_rewrites=-1)


def test_the_default_call_bound_allows_every_call_the_pipeline_can_make() -> None:
    assert CragSettings(k=5, max_rewrites=2).call_bound == 5 * 3 + 5 + 2 + 2
