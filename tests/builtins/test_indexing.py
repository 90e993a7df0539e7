"""``knowledge.index``: a loop brings its collections up to date as ``knowledge index`` does,
logging what it did per collection; a dry run indexes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopengine.builtins import builtin_registry
from loopengine.contract import Outcome
from loopengine.engine import ExecutionDone
from loopengine.errors import NotFound
from loopengine.knowledge import search
from loopengine.store import logs
from tests.engine.conftest import Harness, open_harness
from tests.knowledge.conftest import config, write

pytestmark = pytest.mark.anyio

KB = {
    "kb/hub.md": "# Hub\n\n## Pairing\n\nPress the pairing button once: the ring light blinks.\n",
    "kb/sensors.md": "# Sensors\n\n## Batteries\n\nEach sensor takes one CR2032 coin cell.\n",
}
INDEXING = """\
id: indexing
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: index}
act:
  actions:
    - {action_id: index, skill_id: knowledge.index, params: {collections: COLLECTIONS}}
"""


def _loop(harness: Harness, collections: str = "[docs]") -> Any:
    return harness.loop(INDEXING.replace("COLLECTIONS", collections))


def _report(view: dict[str, Any]) -> dict[str, Any]:
    act = next(phase for phase in view["phases"] if phase["phase"] == "act")
    [call] = act["data"]["calls"]
    report: dict[str, Any] = call["result"]["knowledge_index"]
    return report


async def _lines(harness: Harness, done: ExecutionDone) -> list[str]:
    page = await harness.store.read(logs.lines_of, done.execution_id, 0, 10)
    return [line.message for line in page.lines]


async def test_a_loop_indexes_its_collections_and_logs_what_it_did(tmp_path: Path) -> None:
    write(tmp_path, KB)
    async with open_harness(tmp_path, builtin_registry(), config()) as harness:
        first = await harness.engine.run(_loop(harness))
        again = await harness.engine.run(_loop(harness, "[]"))
        assert (first.outcome, again.outcome) == (Outcome.COMPLETED, Outcome.COMPLETED)
        [made] = _report(await harness.view(first))["collections"]
        [kept] = _report(await harness.view(again))["collections"]
        assert (made["changed"], made["unchanged"], kept["changed"], kept["unchanged"]) == (
            2,
            0,
            0,
            2,
        )
        found = await search(harness.store, harness.config, "docs", "coin cell", k=1)
        assert [chunk.source for chunk in found] == ["kb/sensors.md"]
        assert await _lines(harness, first) == [
            "docs: 2 files, 2 new or changed, 0 removed, 2 chunks written, 0 skipped"
        ]


async def test_an_unknown_collection_fails_the_step_in_one_line(tmp_path: Path) -> None:
    async with open_harness(tmp_path, builtin_registry(), config()) as harness:
        done = await harness.engine.run(_loop(harness, "[manuals]"))
        assert done.outcome is Outcome.FAILED
        assert done.error is not None
        assert done.error.startswith("knowledge.index: ")
        assert "manuals" in done.error
        assert "\n" not in done.error


async def test_a_dry_run_indexes_nothing(tmp_path: Path) -> None:
    write(tmp_path, KB)
    async with open_harness(tmp_path, builtin_registry(), config()) as harness:
        done = await harness.engine.run(_loop(harness), dry_run=True)
        assert done.outcome is Outcome.DRY_RUN
        assert _report(await harness.view(done)) == {"dry_run": True, "collections": ["docs"]}
        with pytest.raises(NotFound, match="'docs' was never indexed"):
            await search(harness.store, harness.config, "docs", "coin cell")
