"""Start-up time of the everyday commands, and memory kept by loading one loop over and over.

Targets (2-core machine): ``--help`` < 0.08 s; ``validate`` of the seed loop < 0.25 s;
``history`` and ``show`` < 0.35 s each; RSS growth over 10,000 loads of one loop file in one
process < 5 MiB. Times are medians of fresh processes, run round by round beside
``python -c pass`` and ``python -c "import pydantic, yaml"`` so that all of them see the machine
in the same state. Where a command's libraries alone cost most of its time, its target is a
margin over them, measured in the same rounds: ``emit`` and ``metrics record`` (which scripts
call in loops) within 0.1 s of ``python -c "import sqlalchemy"``, the floor of every command that
opens the store; ``run`` of the quickstart loop with nothing to do within 0.15 s of
``import sqlalchemy, pydantic, yaml`` at the command line's garbage collector pace
(``loopengine._startup``), the libraries it cannot do without (it reads a loop into its models
and records the execution through the store); ``run`` is also shown over those libraries as it
uses them (a model built, ``anyio.run``, a SQLite engine), which that import leaves out. A margin is judged on the differences of each
round (command minus floor): ok when their upper quartile is under it, MISSED when their lower
quartile is over it, and "noisy" when the machine's noise leaves it undecided.

    python bench/startup.py [--runs 11] [--loads 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from validate_folder import (
    ROOT,
    Case,
    Sample,
    anchors,
    loopengine_command,
    median_s,
    run_rounds,
    verdict,
)

from loopengine._startup import _START_UP

SEED = ROOT / "examples" / "seo_audit"
QUICKSTART = ROOT / "examples" / "quickstart"
GROWTH_TARGET_MIB = 5.0
FEED_MARGIN_S = 0.1
"""``emit`` and ``metrics record``: at most this over ``import sqlalchemy``."""
RUN_MARGIN_S = 0.15
"""``run``: at most this over its libraries (``FLOOR_OF_RUN``)."""
FLOOR_OF_RUN = f"import gc; gc.set_threshold{_START_UP}; import sqlalchemy, pydantic, yaml"
LIBRARIES_IN_USE = (
    f"{FLOOR_OF_RUN}\n"
    "import anyio, pydantic, sqlalchemy\n"
    "class M(pydantic.BaseModel):\n    x: int = pydantic.Field(0, ge=0)\n"
    "async def run(): M.model_validate({'x': 1})\n"
    "anyio.run(run)\n"
    "with sqlalchemy.create_engine('sqlite://').connect() as c: c.exec_driver_sql('select 1')\n"
)
"""The same libraries as ``run`` uses them: ``import pydantic`` alone loads almost nothing of
it, so ``FLOOR_OF_RUN`` leaves out the model machinery, anyio's event loop and SQLite's engine;
``run`` is shown over this floor too, for reference."""


@dataclass(frozen=True)
class OverFloor:
    """A command whose target is a margin (seconds) over a floor timed in the same rounds."""

    case: Case
    floor: Case
    margin: float

    def judged(self, samples: dict[str, list[Sample]], cpu: bool) -> str:
        """The median of the rounds' differences (command minus floor, in wall or CPU time),
        their quartiles, and the verdict."""
        own, under = samples[self.case.label], samples[self.floor.label]
        over = [
            a.cpu_seconds - b.cpu_seconds if cpu else a.seconds - b.seconds
            for a, b in zip(own, under, strict=True)
        ]
        low, middle, high = statistics.quantiles(over, n=4)
        if high < self.margin:
            said = "ok"
        elif low >= self.margin:
            said = "MISSED"
        else:
            said = "noisy: undecided"
        return (
            f"{'CPU' if cpu else 'wall'}  {middle:+.3f} s over the floor (rounds' quartiles "
            f"{low:+.3f} to {high:+.3f})   target < +{self.margin} s   {said}"
        )


# Runs in a fresh interpreter: argv[1] is the config, argv[2] the loop file, argv[3] the count.
LOAD_REPEATEDLY = """
import os, sys
from pathlib import Path
from loopengine.contract import LoopLoader
from loopengine.app import load_workspace

def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

loader = LoopLoader(load_workspace(Path(sys.argv[1])).env)
path, count = Path(sys.argv[2]), int(sys.argv[3])
assert loader.load_file(path).ok
for _ in range(100):
    loader.load_file(path)
before = rss_mib()
for _ in range(count):
    loader.load_file(path)
print(before, rss_mib())
"""


def _times(samples: list[Sample]) -> str:
    cpu = statistics.median(sample.cpu_seconds for sample in samples)
    return f"{median_s(samples):6.3f} s   CPU {cpu:.3f} s"


def checked(command: list[str], cwd: Path | None = None) -> str:
    """The output of ``command``, which must succeed."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def first_execution(command: list[str], cwd: Path) -> tuple[str, str]:
    """Run the quickstart loop once: its execution id (what ``show`` shows) and outcome."""
    checked([*command, "run", "cache_cleanup.yaml"], cwd)
    latest = json.loads(checked([*command, "history", "--json"], cwd))["executions"][0]
    return str(latest["execution_id"]), str(latest["outcome"])


def rss_growth(loads: int) -> tuple[float, float]:
    """RSS (MiB) of a fresh process before and after ``loads`` loads of the seed loop."""
    config, loop = SEED / "loopengine.yaml", SEED / "seo_audit_loop.yaml"
    output = checked([sys.executable, "-c", LOAD_REPEATEDLY, str(config), str(loop), str(loads)])
    before, after = map(float, output.split())
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per figure (>= 10)")
    parser.add_argument("--loads", type=int, default=10_000)
    args = parser.parse_args()
    if args.runs < 10:
        parser.error("--runs must be at least 10: a median of fewer runs is noise here")
    command = loopengine_command()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "quickstart"
        shutil.copytree(QUICKSTART, work)
        os.environ["LOOPENGINE_DATABASE"] = f"sqlite:///{Path(tmp) / 'bench.db'}"
        execution, outcome = first_execution(command, work)
        validate = [*command, "validate", "seo_audit_loop.yaml"]
        run = [*command, "run", "cache_cleanup.yaml"]
        commands = [
            Case("loopengine --help", [*command, "--help"], work, 0.08),
            Case("loopengine validate seo_audit_loop.yaml", validate, SEED, 0.25),
            Case("loopengine history", [*command, "history"], work, 0.35),
            Case("loopengine show ID", [*command, "show", execution], work, 0.35),
        ]
        fixed = anchors(work)
        database = Case(
            'python -c "import sqlalchemy"', [sys.executable, "-c", "import sqlalchemy"], work
        )
        running = Case(
            "import sqlalchemy, pydantic, yaml (CLI's GC pace)",
            [sys.executable, "-c", FLOOR_OF_RUN],
            work,
        )
        in_use = Case(
            "the same, as run uses them (a model, anyio.run, SQLite)",
            [sys.executable, "-c", LIBRARIES_IN_USE],
            work,
        )
        emit = [*command, "emit", "bench.tick", "--data", '{"n": 1}']
        record = [*command, "metrics", "record", "bench.load", "0.5"]
        floored = [
            OverFloor(Case("loopengine emit bench.tick", emit, work), database, FEED_MARGIN_S),
            OverFloor(Case("loopengine metrics record", record, work), database, FEED_MARGIN_S),
            OverFloor(Case(f"loopengine run ({outcome})", run, work), running, RUN_MARGIN_S),
            OverFloor(Case(f"loopengine run ({outcome})", run, work), in_use, RUN_MARGIN_S),
        ]
        every = [*fixed, *commands, *(c for f in floored for c in (f.floor, f.case))]
        samples = run_rounds(list({case.label: case for case in every}.values()), args.runs)
    floor, libraries = (median_s(samples[case.label]) for case in fixed)
    width = max(len(case.label) for case in [*commands, running, in_use])
    print(f"start-up: medians of {args.runs} fresh processes, run round by round")
    for case in [*fixed, *commands]:
        seconds = median_s(samples[case.label])
        line = f"  {case.label:<{width}}  {seconds:6.3f} s"
        if case.target is not None:
            line += (
                f"   target < {case.target} s   {verdict(seconds < case.target):<6}   "
                f"= {seconds / floor:4.1f}x pass, {seconds / libraries:3.1f}x pydantic+yaml"
            )
        print(line)
    for floor_case in (database, running, in_use):
        print(f"  {floor_case.label:<{width}}  {_times(samples[floor_case.label])}")
        for over in floored:
            if over.floor is floor_case:
                print(f"    {over.case.label:<{width - 2}}  {_times(samples[over.case.label])}")
                for cpu in (False, True):
                    print(f"      {over.judged(samples, cpu)}")
    before, after = rss_growth(args.loads)
    growth = after - before
    print(
        f"{args.loads:,} loads of seo_audit_loop.yaml in one process: RSS {before:.1f} → "
        f"{after:.1f} MiB, growth {growth:.2f} MiB   target < {GROWTH_TARGET_MIB} MiB   "
        f"{verdict(growth < GROWTH_TARGET_MIB)}"
    )


if __name__ == "__main__":
    main()
