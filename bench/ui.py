"""The web console's pages next to the API calls that return the same data, on a large store.

    python bench/ui.py [--rows 50000] [--requests 200]

A daemon (a subprocess on 127.0.0.1, its SQLite store holding ``--rows`` executions of 20
loops over six months, as ``bench/history.py`` builds them) is asked, in turn, for each console
page (logged in with the API token) and for the API call that answers with the same data:

- the overview (``/``) and ``GET /status``;
- the executions (``/console/executions``), unfiltered and for one loop and outcome, and
  ``GET /executions`` with the same filters and page size;
- one execution (``/console/executions/{id}``) and ``GET /executions/{id}``.

Medians of ``--requests`` interleaved requests each, and their ratio (goal: a page within 2× its
API call); then each page's weight with the console's CSS and JS (goal: at most 150 KB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from api import TOKEN, start_daemon
from history import LOOPS, _store

PAGE = 50
"""The executions one console page lists (``loopengine/console/_executions.py``)."""
TIME_GOAL = 2.0
WEIGHT_GOAL = 150_000
LOOP = """\
id: {id}
trigger: {{type: manual}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""


def _workspace(root: Path, rows: int) -> dict[str, str]:
    (root / "loops").mkdir()
    for loop_id in LOOPS:
        (root / "loops" / f"{loop_id}.yaml").write_text(LOOP.format(id=loop_id))
    (root / "loopengine.yaml").write_text("daemon: {port: 0}\n")
    _store(root / "store.db", rows, ()).dispose()
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{root / 'store.db'}"}
    env["LOOPENGINE_API_TOKEN"] = TOKEN
    env.pop("LOOPENGINE_CONFIG", None)
    return env


def _timed(client: httpx.Client, path: str, times: list[float]) -> httpx.Response:
    started = time.perf_counter()
    answer = client.get(path)
    times.append((time.perf_counter() - started) * 1000)
    answer.raise_for_status()
    return answer


def main(rows: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = _workspace(root, rows)
        daemon, url = start_daemon(root, env)
        try:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with (
                httpx.Client(base_url=url, headers=headers, timeout=60) as api,
                httpx.Client(base_url=url, timeout=60) as console,
            ):
                login = console.post(
                    "/login", data={"token": TOKEN, "next": "/"}, headers={"Origin": url}
                )
                assert login.status_code in (200, 303), login.text
                newest = api.get("/executions", params={"limit": 1}).json()["executions"][0]
                one = newest["execution_id"] if "execution_id" in newest else newest["id"]
                filters = "loop_id=loop-03&outcome=failed"
                pairs = {
                    "overview": ("/", "/status"),
                    "executions": ("/console/executions", f"/executions?limit={PAGE}"),
                    "executions of a loop, failed": (
                        f"/console/executions?{filters}",
                        f"/executions?{filters}&limit={PAGE}",
                    ),
                    "one execution": (f"/console/executions/{one}", f"/executions/{one}"),
                }
                print(f"{rows:,} executions; medians of {requests} interleaved requests, ms")
                print(f"  {'page':32} {'console':>8} {'API':>8} {'ratio':>6}")
                weights = {}
                for name, (page, call) in pairs.items():
                    shown: list[float] = []
                    asked: list[float] = []
                    for _ in range(5):
                        _timed(console, page, [])
                        _timed(api, call, [])
                    for _ in range(requests):
                        answer = _timed(console, page, shown)
                        _timed(api, call, asked)
                    weights[name] = len(answer.content)
                    ratio = statistics.median(shown) / statistics.median(asked)
                    verdict = "ok" if ratio <= TIME_GOAL else "MISSED"
                    print(
                        f"  {name:32} {statistics.median(shown):8.2f} "
                        f"{statistics.median(asked):8.2f} {ratio:5.1f}× ({verdict})"
                    )
                assets = sum(
                    len(console.get(f"/console/static/{name}").content)
                    for name in ("console.css", "console.js")
                )
                print(f"weight with the CSS and JS ({assets:,} bytes), goal ≤ {WEIGHT_GOAL:,}:")
                for name, size in weights.items():
                    verdict = "ok" if size + assets <= WEIGHT_GOAL else "MISSED"
                    print(f"  {name:32} {size + assets:>8,} bytes ({verdict})")
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=200)
    options = parser.parse_args()
    main(options.rows, options.requests)
