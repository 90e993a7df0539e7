"""The learning scenarios of ``bench/learning.py``, fewer cycles and no timing: on a simulated
cluster, a node whose quality drops from 8 to 3 loses the first rank within two cycles, two
equal nodes graded with noise never swap places, and worse instructions are rolled back within
three cycles."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def learned() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "learning.py"), "--cycles", "8", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_node_whose_quality_drops_loses_the_first_rank_within_two_cycles(
    learned: dict[str, Any],
) -> None:
    drop = learned["drop"]
    assert drop["routing"][drop["dropped_at_cycle"] - 1][0] == "M1"
    assert drop["cycles_to_lose_first_rank"] is not None
    assert drop["cycles_to_lose_first_rank"] <= 2


def test_stable_noise_does_not_flip_the_routing(learned: dict[str, Any]) -> None:
    assert learned["noise"]["flips_per_10_cycles"] <= 1


def test_every_response_of_a_cycle_is_graded(learned: dict[str, Any]) -> None:
    assert learned["noise"]["graded"] == 8 * 10


def test_worse_instructions_are_rolled_back_within_three_cycles(learned: dict[str, Any]) -> None:
    rollback = learned["rollback"]
    assert "rollback" not in rollback["actions"][: rollback["swapped_at_cycle"]]
    assert rollback["cycles_to_roll_back"] is not None
    assert rollback["cycles_to_roll_back"] <= 3
