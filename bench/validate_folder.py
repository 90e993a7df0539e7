"""Time ``loopengine validate`` on a folder of 200 loops and ``loopengine --help`` start-up.

Targets (issue: loop contracts): 200 files in under 2 s on a 2-core machine; ``--help`` under
0.3 s. Each figure is the best of several runs of a fresh process, as a user would run it.

    python bench/validate_folder.py [--files 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "seo_audit"


def _make_folder(folder: Path, count: int) -> None:
    loops = folder / "loops"
    loops.mkdir()
    shutil.copy(SEED / "seo_skills.py", folder / "seo_skills.py")
    shutil.copy(SEED / "loopengine.yaml", folder / "loopengine.yaml")
    seed = (SEED / "seo_audit_loop.yaml").read_text()
    for index in range(count):
        text = seed.replace('id: "seo_audit_loop"', f'id: "seo_audit_loop_{index:03}"')
        (loops / f"loop_{index:03}.yaml").write_text(text)


def _time(command: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
        timings.append(time.perf_counter() - started)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return min(timings), statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    command = [sys.executable, "-m", "loopengine"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _make_folder(folder, args.files)
        lines = (SEED / "seo_audit_loop.yaml").read_text().count("\n")
        best, median = _time([*command, "validate", "loops"], folder, args.runs)
        help_best, help_median = _time([*command, "--help"], folder, args.runs)
        floor_best, _ = _time([sys.executable, "-c", "pass"], folder, args.runs)
    print(f"validate {args.files} loop files ({lines} lines each, seed example):")
    print(
        f"  best {best:.3f} s   median {median:.3f} s   target < 2.0 s   "
        f"({'ok' if best < 2.0 else 'MISSED'}; {best / 2.0:.2f} of the budget)"
    )
    print(f"  per file after start-up: {(best - help_best) / args.files * 1000:.2f} ms")
    print("loopengine --help:")
    print(
        f"  best {help_best:.3f} s   median {help_median:.3f} s   target < 0.3 s   "
        f"({'ok' if help_best < 0.3 else 'MISSED'})"
    )
    print(f"  bare `python -c pass` on this machine: {floor_best:.3f} s")


if __name__ == "__main__":
    main()
