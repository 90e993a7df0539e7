"""Time ``loopengine validate`` on a folder of loops, and its peak memory at two folder sizes.

Targets (issue "Foundation pass", 2-core machine): 200 files validated in under 1 s in all,
start-up included; the peak RSS with 2,000 files under 1.5x that with 200. Every figure is the
median of fresh processes, run round by round beside two anchors (``python -c pass`` and
``python -c "import pydantic, yaml"``) so that all of them see the machine in the same state.

    python bench/validate_folder.py [--files 200] [--big 2000] [--runs 11]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seo_audit"
TOTAL_TARGET_S = 1.0
RSS_RATIO_TARGET = 1.5


@dataclass(frozen=True)
class Sample:
    """One fresh process: its wall time, its CPU time (user and system: what other processes
    on a busy machine add to the wall time, they do not add here) and its peak resident set."""

    seconds: float
    peak_kib: int
    cpu_seconds: float


@dataclass(frozen=True)
class Case:
    """A command to time, run in ``cwd``, and the median it should stay under (seconds)."""

    label: str
    command: list[str]
    cwd: Path
    target: float | None = None


def loopengine_command() -> list[str]:
    """The ``loopengine`` script beside this interpreter, as a user runs it.

    The package's bytecode is compiled first, as an installed package's is: with
    ``PYTHONDONTWRITEBYTECODE`` set, every run would otherwise compile the sources again.
    """
    compileall.compile_dir(ROOT / "loopengine", quiet=1)
    script = Path(sys.executable).with_name("loopengine")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "loopengine"]


def anchors(cwd: Path) -> list[Case]:
    """The interpreter's floor and the cost of the two libraries every command needs."""
    return [
        Case("python -c pass", [sys.executable, "-c", "pass"], cwd),
        Case(
            'python -c "import pydantic, yaml"',
            [sys.executable, "-c", "import pydantic, yaml"],
            cwd,
        ),
    ]


def run_once(case: Case) -> Sample:
    """Run ``case`` in a fresh process; its peak RSS comes from ``wait4``."""
    with tempfile.TemporaryFile() as output:
        started = time.perf_counter()
        process = subprocess.Popen(case.command, cwd=case.cwd, stdout=output, stderr=output)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            output.seek(0)
            shown = " ".join(case.command)
            raise SystemExit(f"{shown} failed ({process.returncode}):\n{output.read().decode()}")
    return Sample(seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)


def run_rounds(cases: list[Case], runs: int) -> dict[str, list[Sample]]:
    """``runs`` rounds, each running every case once in turn."""
    samples: dict[str, list[Sample]] = {case.label: [] for case in cases}
    for _ in range(runs):
        for case in cases:
            samples[case.label].append(run_once(case))
    return samples


def median_s(samples: list[Sample]) -> float:
    return statistics.median(sample.seconds for sample in samples)


def median_mib(samples: list[Sample]) -> float:
    return statistics.median(sample.peak_kib for sample in samples) / 1024


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def make_folder(folder: Path, count: int) -> None:
    """``count`` copies of the seed loop (distinct ids) under ``folder/loops``, with its config."""
    loops = folder / "loops"
    loops.mkdir(parents=True)
    shutil.copy(SEED / "seo_skills.py", folder / "seo_skills.py")
    shutil.copy(SEED / "loopengine.yaml", folder / "loopengine.yaml")
    seed = (SEED / "seo_audit_loop.yaml").read_text()
    for index in range(count):
        text = seed.replace('id: "seo_audit_loop"', f'id: "seo_audit_loop_{index:04}"')
        (loops / f"loop_{index:04}.yaml").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--big", type=int, default=2000, help="the larger folder, for memory")
    parser.add_argument("--runs", type=int, default=11, help="fresh processes per figure (>= 10)")
    args = parser.parse_args()
    if args.runs < 10:
        parser.error("--runs must be at least 10: a median of fewer runs is noise here")
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        make_folder(small, args.files)
        make_folder(big, args.big)
        validate = [*loopengine_command(), "validate", "loops"]
        small_label = f"loopengine validate ({args.files} files)"
        big_label = f"loopengine validate ({args.big} files)"
        cases = [
            *anchors(small),
            Case(small_label, validate, small),
            Case(big_label, validate, big),
        ]
        samples = run_rounds(cases, args.runs)
    lines = (SEED / "seo_audit_loop.yaml").read_text().count("\n")
    print(f"loopengine validate on copies of the seed loop ({lines} lines each)")
    print(f"medians of {args.runs} fresh processes, run round by round:")
    width = max(len(case.label) for case in cases)
    for case in cases:
        found = samples[case.label]
        print(
            f"  {case.label:<{width}}  {median_s(found):7.3f} s   peak {median_mib(found):6.1f} MiB"
        )
    total = median_s(samples[small_label])
    floor = median_s(samples["python -c pass"])
    libraries = median_s(samples['python -c "import pydantic, yaml"'])
    print(
        f"{args.files} files in all, start-up included: {total:.3f} s   "
        f"target < {TOTAL_TARGET_S} s   {verdict(total < TOTAL_TARGET_S)}"
    )
    print(
        f"  = {total / floor:.1f}x python -c pass, "
        f'{total / libraries:.1f}x python -c "import pydantic, yaml"'
    )
    extra = (median_s(samples[big_label]) - total) / (args.big - args.files)
    print(f"  each file past the first {args.files}: {extra * 1000:.2f} ms")
    ratio = median_mib(samples[big_label]) / median_mib(samples[small_label])
    print(
        f"peak RSS, {args.big} files / {args.files} files: {ratio:.2f}x   "
        f"target < {RSS_RATIO_TARGET}x   {verdict(ratio < RSS_RATIO_TARGET)}"
    )


if __name__ == "__main__":
    main()
