"""How fast the autolearn loops learn, on a simulated cluster of scripted nodes whose quality
changes while they run (seed 003).

    python bench/learning.py [--messages 10] [--cycles 12] [--json]

A cycle is ``--messages`` chat messages in simple mode, then one run of a shipped loop
(``autotune``: grade, score, reorder; ``autoreview``: grade, watch the instructions, review),
everything in-process on a real store. The nodes M1 and M2 (routing ``default: [M1, M2]``)
answer at once; the grader OL1 reads the quality the answering node was given (``[q=N]`` in its
answer) and grades it, with noise when asked.

- ``drop``: M1 answers at 8, M2 at 6; once both are ranked, M1 drops to 3. Reported: cycles
  until M1 loses the first rank (goal ≤ 2).
- ``noise``: both at 7, graded 7 ± 1 at random. Reported: routing flips per 10 cycles once both
  are ranked (goal ≤ 1).
- grading overhead per chat message: the time a cycle's grading step takes, over the responses
  it graded (a zero-latency grader: what loopengine itself adds), next to what a chat message
  takes in the same run on the same scripted nodes.
- ``rollback``: M1 answers at 8, and at 3 under worse instructions, which are swapped in
  (as a version that got through review would be) once the category has a mean grade; cycles of
  ``autoreview`` until they are rolled back (goal ≤ 3).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from loopengine.testing import FakeLLMServer, Response, answering, reply

GRADED = re.compile(r"\[q=(\d+)\]")


@dataclass
class World:
    """What each node's answers are worth now, and how noisy the grader is."""

    quality: dict[str, int]
    noise: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    worse: str = "Answer in riddles."
    """Instructions under which every node answers at 3."""

    def answer(self, node: str) -> Any:
        def respond(request: dict[str, Any]) -> Response:
            worse = self.worse in str(request["messages"][0]["content"])
            return reply(f"answer from {node} [q={3 if worse else self.quality[node]}]")

        return respond

    def grade(self, request: dict[str, Any]) -> Response:
        found = GRADED.search(str(request["messages"][-1]["content"]))
        quality = int(found.group(1)) if found else 5
        noisy = quality + self.rng.randint(-self.noise, self.noise)
        return reply(str(min(10, max(1, noisy))))


def _config(base_url: str) -> str:
    nodes = "\n".join(
        f"    {name}: {{base_url: '{base_url}', model: {name.lower()}, timeout_s: 10}}"
        for name in ("OL1", "M1", "M2")
    )
    return (
        f"cluster:\n  nodes:\n{nodes}\n  routing:\n    default: [M1, M2]\n"
        "autolearn: {grader: OL1, min_samples: 5, margin: 0.5, explore: 0.1}\n"
    )


@dataclass
class Cycle:
    routing: list[str]
    graded: int
    grading_s: float
    action: str
    """What the loop decided (``reorder``, ``keep``, ``rollback``…)."""
    chat_s: float
    """The cycle's chat messages, in all (the grading's anchor: what a message costs)."""


async def _cycles(
    root: Path, world: World, messages: int, cycles: int, change: Any, loop: str
) -> list[Cycle]:
    """Run ``cycles`` cycles of ``loop``; ``change(world, index, cycles_so_far, runtime)`` may
    change the world (or the store) before a cycle."""
    from loopengine._resources import shipped_loop
    from loopengine.app import chat, chat_loop, open_runtime
    from loopengine.store import autolearn, executions

    done: list[Cycle] = []
    async with open_runtime(root / "loopengine.yaml") as runtime:
        talk = chat_loop(runtime)
        learning = runtime.load_loop(str(shipped_loop(loop)))
        for index in range(cycles):
            await change(world, index, done, runtime)
            talking = time.perf_counter()
            for _ in range(messages):
                await chat(runtime, talk, "How many phases has a loop?", mode="simple")
            chat_s = time.perf_counter() - talking
            execution = await runtime.engine.run(learning)
            row, phases = await runtime.store.read(
                lambda c, e=execution.execution_id: (
                    executions.get_execution(c, e),
                    executions.phases_of(c, e),
                )
            )
            assert row is not None
            elapsed = sum(
                call["duration_ms"] / 1000
                for phase in phases
                for call in phase.data.get("calls") or ()
                if call["skill"] == "autolearn.grade"
            )
            graded = int(row.context["data"]["grading"]["graded"])
            orders = await runtime.store.read(autolearn.routing)
            routing = list(orders["default"].nodes) if "default" in orders else ["M1", "M2"]
            action = str(row.context["data"]["decision"]["action"])
            done.append(Cycle(routing, graded, elapsed, action, chat_s))
    return done


async def _unchanged(*_: Any) -> None:
    return None


def _simulate(
    world: World, messages: int, cycles: int, change: Any, loop: str = "autotune"
) -> list[Cycle]:
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as folder:
        for node in ("M1", "M2"):
            server.script(node.lower(), [answering(world.answer(node))])
        server.script("ol1", [answering(world.grade)])
        root = Path(folder)
        (root / "loopengine.yaml").write_text(_config(server.base_url))
        os.environ.pop("LOOPENGINE_DATABASE", None)
        os.environ["LOOPENGINE_CONFIG"] = str(root / "loopengine.yaml")
        return anyio.run(_cycles, root, world, messages, cycles, change, loop)


def drop_scenario(messages: int, cycles: int) -> dict[str, Any]:
    """Cycles until M1, dropping from 8 to 3 once both nodes are ranked, loses the first rank."""
    world = World({"M1": 8, "M2": 6})
    dropped_at: list[int] = []

    async def change(world: World, index: int, *_: Any) -> None:
        if not dropped_at and index >= cycles // 2:
            world.quality["M1"] = 3
            dropped_at.append(index)

    history = _simulate(world, messages, cycles, change)
    start = dropped_at[0] if dropped_at else cycles
    lost = next(
        (i - start + 1 for i in range(start, cycles) if history[i].routing[0] != "M1"), None
    )
    return {
        "dropped_at_cycle": start,
        "cycles_to_lose_first_rank": lost,
        "routing": [c.routing for c in history],
    }


def noise_scenario(messages: int, cycles: int) -> dict[str, Any]:
    """Routing flips per 10 cycles when both nodes are equal and grades are noisy."""
    world = World({"M1": 7, "M2": 7}, noise=1)
    history = _simulate(world, messages, cycles, _unchanged)
    ranked = history[cycles // 2 :]
    flips = sum(a.routing != b.routing for a, b in itertools.pairwise(ranked))
    per_10 = 10 * flips / max(1, len(ranked) - 1)
    graded = sum(c.graded for c in history)
    grading_ms = 1000 * sum(c.grading_s for c in history) / max(1, graded)
    chat_ms = 1000 * sum(c.chat_s for c in history) / (messages * len(history))
    return {
        "flips_per_10_cycles": per_10,
        "graded": graded,
        "grading_ms_per_graded_message": grading_ms,
        "chat_ms_per_message": chat_ms,
    }


def rollback_scenario(messages: int, cycles: int) -> dict[str, Any]:
    """Cycles of ``autoreview`` until worse instructions, swapped in once the category has a
    mean grade, are rolled back."""
    world = World({"M1": 8, "M2": 8})
    swapped_at: list[int] = []

    async def change(world: World, index: int, done: list[Cycle], runtime: Any) -> None:
        from loopengine.autolearn import Sample, category_means
        from loopengine.store import autolearn, prompts

        if swapped_at or index < 2:
            return
        rows = await runtime.store.read(autolearn.samples_in_window, 20)
        baseline = category_means(Sample.of(row) for row in rows)["default"]
        await runtime.store.write(
            prompts.add_version,
            "default",
            world.worse,
            parent=0,
            baseline=baseline,
            reason="a worse version",
            execution_id=None,
            now=time.time(),
        )
        swapped_at.append(index)

    history = _simulate(world, messages, cycles, change, "autoreview")
    start = swapped_at[0] if swapped_at else cycles
    rolled = next(
        (i - start + 1 for i in range(start, cycles) if history[i].action == "rollback"), None
    )
    return {
        "swapped_at_cycle": start,
        "cycles_to_roll_back": rolled,
        "actions": [c.action for c in history],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10, help="chat messages per cycle")
    parser.add_argument("--cycles", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    drop = drop_scenario(args.messages, args.cycles)
    noise = noise_scenario(args.messages, args.cycles)
    rollback = rollback_scenario(args.messages, args.cycles)
    result = {"drop": drop, "noise": noise, "rollback": rollback}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{args.cycles} cycles of {args.messages} messages each")
    print(
        f"drop 8 -> 3 at cycle {drop['dropped_at_cycle']}: first rank lost after "
        f"{drop['cycles_to_lose_first_rank']} cycle(s) (goal <= 2)"
    )
    print(
        f"stable noise: {noise['flips_per_10_cycles']:.1f} routing flips per 10 cycles (goal <= 1)"
    )
    print(
        f"grading time per graded message: {noise['grading_ms_per_graded_message']:.2f} ms "
        f"({noise['graded']} graded; a chat message itself: {noise['chat_ms_per_message']:.2f} "
        "ms, same run, same scripted nodes)"
    )
    print(
        f"worse instructions swapped in at cycle {rollback['swapped_at_cycle']}: rolled back "
        f"after {rollback['cycles_to_roll_back']} cycle(s) (goal <= 3)"
    )


if __name__ == "__main__":
    main()
