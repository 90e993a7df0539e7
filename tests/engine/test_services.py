"""What the engine's services give skills, and what they cost only the skills that use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopengine.contract import Config, Outcome
from loopengine.engine import Engine, Services
from loopengine.skills import Registry
from loopengine.store import Store
from tests.engine.conftest import Harness

pytestmark = pytest.mark.anyio

CLUSTER = Config.model_validate(
    {"cluster": {"nodes": {"OL1": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}}}
)


class CountingServices(Services):
    """Services that count how often the LLM runtime is asked for."""

    asked = 0

    def llm(self) -> Any:
        CountingServices.asked += 1
        return super().llm()


async def test_skills_that_use_no_model_never_build_the_cluster_clients(
    tmp_path: Path, engine_registry: Registry
) -> None:
    CountingServices.asked = 0
    async with Store.open(f"sqlite:///{tmp_path / 'loopengine.db'}") as store:
        services = CountingServices(engine_registry, store, CLUSTER, tmp_path)
        try:
            harness = Harness(tmp_path, engine_registry, store, Engine(services), CLUSTER)
            loop = harness.loop(
                "id: plain\ntrigger: {type: manual}\nanalyze:\n  analysis_steps:\n"
                "    - {name: look, skill_id: report, params: {values: {seen: 1}}}\n"
            )
            done = await harness.engine.run(loop)
        finally:
            await services.aclose()
    assert done.outcome is Outcome.COMPLETED
    assert CountingServices.asked == 0


@pytest.mark.parametrize(
    ("inputs", "error"),
    [
        (
            {"start": "soon", "end": 2},
            "params of skill 'window': start: Input should be a valid integer, unable to parse "
            "string as an integer",
        ),
        (
            {"start": 5, "end": 1},
            "params of skill 'window': Value error, start 5 is not before end 1",
        ),
        (
            {"end": 2},
            "params of skill 'window': start: null, nothing given; Input should be a valid integer",
        ),
    ],
    ids=["field", "model", "missing"],
)
async def test_a_rendered_param_a_skills_model_refuses_fails_its_step_in_one_line(
    harness: Harness, inputs: dict[str, Any], error: str
) -> None:
    loop = harness.loop(
        "id: windowed\ntrigger: {type: manual}\nparams: {start: {}, end: {}}\nanalyze:\n"
        "  analysis_steps:\n    - name: size\n      skill_id: window\n"
        "      params: {start: '${ input.start }', end: '${ input.end }'}\n"
    )
    done = await harness.engine.run(loop, inputs=inputs)
    assert done.outcome is Outcome.FAILED
    assert (await harness.view(done))["error"] == error
