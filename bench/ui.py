"""The web console's pages next to the API calls that return the same data, on a large store,
and how soon a running execution's phases reach its open page.

    python bench/ui.py [--rows 50000] [--requests 200] [--live 20]

A daemon (a subprocess on 127.0.0.1, its SQLite store holding ``--rows`` executions of 20
loops over six months, as ``bench/history.py`` builds them, beside a loop with no history,
``paced``, for the live updates) is asked, in turn, for each console page (logged in with the
API token) and for the API call that answers with the same data:

- the overview (``/``) and ``GET /status``;
- the executions (``/console/executions``), unfiltered and for one loop and outcome, and
  ``GET /executions`` with the same filters and page size;
- one execution (``/console/executions/{id}``) and ``GET /executions/{id}``.

Medians of ``--requests`` interleaved requests each, and their ratio (goal: a page within 2× its
API call); then each page's weight with the console's CSS and JS (goal: at most 150 KB).

Live updates (goal: a phase on the page at most 100 ms after its commit): ``--live`` executions
of ``paced`` (detect, analyze and act each a ``sleep`` of ``PAUSE`` s, a commit per phase), one
more first not counted, each triggered through the API and its page opened, once it started,
in Debian's Chromium (headless, Playwright, logged in through the login form), which follows it
until it finishes. In the page a ``MutationObserver`` notes when each phase first shows in the
timeline (the DOM changed, before paint) on the clock of the daemon's ``time.time()``
(``performance.timeOrigin + performance.now()``; how far the two are apart is printed). Each
phase's latency is measured from two instants of the daemon's side, median and p95 over every
phase shown live: its recorded end (``completed_at`` of ``GET /executions/{id}``), which
precedes its commit, so an upper bound; and the arrival of its change event at an HTTP client
following ``/console/live`` as the page does, which follows the commit. Then the steps between,
by the page's clock: the event in the page's ``EventSource``, the start and end of the page's
read of itself (Resource Timing), the phase in the page. ``--live 0`` skips it (no browser).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from api import TOKEN, percentile, start_daemon
from history import LOOPS, _store
from playwright.async_api import BrowserContext, Page, async_playwright

PAGE = 50
"""The executions one console page lists (``loopengine/console/_executions.py``)."""
TIME_GOAL = 2.0
WEIGHT_GOAL = 150_000
LOOP = """\
id: {id}
trigger: {{type: manual}}
decide: {{decision_tree: [], fallback_action: log_only}}
"""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LIVE_GOAL_MS = 100.0
PAUSE = "0.3"
"""Seconds each of detect, analyze and act of ``paced`` lasts (a ``sleep``)."""
PACED = f"""\
id: paced
trigger: {{type: manual}}
detect:
  sources:
    - {{name: pause, as: paused, skill: shell, params: {{command: [sleep, "{PAUSE}"]}}}}
analyze:
  analysis_steps:
    - {{name: pause, skill_id: shell, params: {{command: [sleep, "{PAUSE}"]}}}}
decide: {{decision_tree: [], fallback_action: pause}}
act:
  actions:
    - {{action_id: pause, skill_id: shell, params: {{command: [sleep, "{PAUSE}"]}}}}
"""
WATCH = """
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const live = { shown: {}, initial: null, told: {} };
  window.__live = live;
  const look = () => {
    for (const node of document.querySelectorAll("#execution ol.timeline .phase")) {
      const name = node.textContent.trim();
      if (!(name in live.shown)) {
        live.shown[name] = now();
      }
    }
  };
  new MutationObserver(look).observe(document, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => {
    look();
    live.initial = Object.keys(live.shown);
  });
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("change", (event) => {
        const what = JSON.parse(event.data).what;
        if (!(what in live.told)) {
          live.told[what] = now();
        }
      });
    }
  };
})();
"""
"""Each phase's first instant in the execution page's timeline (a ``MutationObserver``), which
phases the page held when it loaded, and when the page's ``EventSource`` got each change; epoch
milliseconds, the clock of the daemon's ``time.time()``."""
GOALS = {
    "end": f"phase end (before its commit) → page, goal ≤ {LIVE_GOAL_MS:.0f}",
    "event": f"its change event at a client → page, goal ≤ {LIVE_GOAL_MS:.0f}",
}
"""A phase's way to the page, from its two reference instants: its recorded end, which
precedes its commit (an upper bound), and its change event's arrival at an HTTP client
following the same stream as the page (after the commit)."""
STEPS = {
    "end to event": "phase end → change event at the client",
    "event to page": "→ change event in the page",
    "page to read": "→ the page starts reading itself",
    "read": "the read (the daemon renders, sends)",
    "read to swap": "the read's end → phase in the page",
}
"""The way's steps: the change event reaching the HTTP client, then, by the page's clock, its
``EventSource`` and its reads of itself (Resource Timing)."""
READS = """
performance.getEntriesByType("resource")
  .filter((entry) => entry.initiatorType === "fetch" && entry.name === location.href)
  .map((entry) => [performance.timeOrigin + entry.startTime,
                   performance.timeOrigin + entry.responseEnd])
"""
"""The page's reads of itself (``console.js``'s ``follow``): when each started and ended."""


def _workspace(root: Path, rows: int) -> dict[str, str]:
    (root / "loops").mkdir()
    for loop_id in LOOPS:
        (root / "loops" / f"{loop_id}.yaml").write_text(LOOP.format(id=loop_id))
    (root / "loops" / "paced.yaml").write_text(PACED)
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


async def _changes(
    console: httpx.AsyncClient,
    told: dict[tuple[str, str], float],
    started: asyncio.Queue[str],
    following: asyncio.Event,
) -> None:
    """Follow every execution's changes as a page does (``/console/live``), keeping when each
    first reached this client (epoch ms) and handing on the executions that start."""
    while True:
        async with console.stream("GET", "/console/live") as answer:
            answer.raise_for_status()
            following.set()
            async for line in answer.aiter_lines():
                if line.startswith("data: "):
                    at = time.time() * 1000
                    change = json.loads(line.removeprefix("data: "))
                    told.setdefault((change["execution"], change["what"]), at)
                    if change["what"] == "started":
                        started.put_nowait(change["execution"])


def _epoch_ms(moment: str) -> float:
    return datetime.fromisoformat(moment).timestamp() * 1000


def _samples(
    execution_id: str,
    record: dict[str, Any],
    live: dict[str, Any],
    reads: list[list[float]],
    told: dict[tuple[str, str], float],
) -> list[dict[str, float]]:
    """Each phase the page showed live, with ``GOALS`` and ``STEPS`` (ms). A phase's change is
    the event named after it, or the execution's ``finished`` (its last commit holds the phases
    that end with it); its read is the last one the page ended before showing it."""
    ends = {phase["phase"]: _epoch_ms(phase["completed_at"]) for phase in record["phases"]}
    samples = []
    for name, shown in live["shown"].items():
        if name in live["initial"]:
            continue
        what = name if (execution_id, name) in told else "finished"
        event = told[(execution_id, what)]
        start, end = max((read for read in reads if read[1] <= shown), key=lambda read: read[1])
        sample = {
            "end": shown - ends[name],
            "event": shown - event,
            "end to event": event - ends[name],
            "read": end - start,
            "read to swap": shown - end,
        }
        if (page := live["told"].get(what)) is not None:
            sample["event to page"] = page - event
            sample["page to read"] = start - page
        samples.append(sample)
    return samples


async def _logged_in(context: BrowserContext) -> Page:
    """A page of ``context`` logged in through the login form, as a person does, watching the
    execution pages it opens (``WATCH``)."""
    await context.add_init_script(WATCH)
    page = await context.new_page()
    page.set_default_timeout(60_000)
    await page.goto("/")
    await page.get_by_label("The daemon's token").fill(TOKEN)
    await page.get_by_role("button", name="Log in").click()
    await page.get_by_role("heading", name="Overview").wait_for()
    return page


async def _follow(url: str, executions: int) -> tuple[list[dict[str, float]], int, float]:
    """Runs of the paced loop, each one's page opened in Chromium once it started; the phases
    shown live (after one run not counted), how many the pages held when they loaded, and how
    far the browser's clock is from ``time.time()`` (ms)."""
    told: dict[tuple[str, str], float] = {}
    started: asyncio.Queue[str] = asyncio.Queue()
    following = asyncio.Event()
    samples: list[dict[str, float]] = []
    loaded = 0
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as api,
        httpx.AsyncClient(base_url=url, timeout=60) as console,
        async_playwright() as playwright,
    ):
        login = await console.post(
            "/login", data={"token": TOKEN, "next": "/"}, headers={"Origin": url}
        )
        assert login.status_code in (200, 303), login.text
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        reader = asyncio.create_task(_changes(console, told, started, following))
        try:
            page = await _logged_in(await browser.new_context(base_url=url))
            await asyncio.wait_for(following.wait(), 60)
            for run in range(executions + 1):
                asked = await api.post("/loops/paced/trigger", json={"inputs": {}})
                asked.raise_for_status()
                execution_id = await asyncio.wait_for(started.get(), 60)
                await page.goto(f"/console/executions/{execution_id}")
                await page.locator("[data-stream]").wait_for(state="detached")
                live = await page.evaluate("window.__live")
                reads = await page.evaluate(READS)
                record = (await api.get(f"/executions/{execution_id}")).raise_for_status().json()
                if run:
                    samples.extend(_samples(execution_id, record, live, reads, told))
                    loaded += len(live["initial"])
            before = time.time() * 1000
            clock = await page.evaluate("performance.timeOrigin + performance.now()")
            offset = clock - (before + time.time() * 1000) / 2
        finally:
            await browser.close()
            reader.cancel()
            with suppress(asyncio.CancelledError):
                await reader
    return samples, loaded, offset


def live(url: str, executions: int) -> None:
    """Follow ``executions`` runs of the paced loop in Chromium and print how soon each phase
    reached the page."""
    if CHROMIUM is None:
        raise SystemExit("no chromium on PATH: apt-get install chromium (or --live 0)")
    samples, loaded, offset = asyncio.run(_follow(url, executions))
    print(
        f"live updates: {executions} executions of a loop whose detect, analyze and act last "
        f"{PAUSE} s each (after one not counted), each one's page open in Chromium while it "
        f"runs:\n  {len(samples)} phases shown live ({loaded} on the page when it loaded, not "
        f"counted); the browser's clock {offset:+.1f} ms from time.time(); ms"
    )
    print(f"  {'':50} {'median':>6} {'':6} {'p95':>6}")
    for key, label in GOALS.items():
        _row(label, [sample[key] for sample in samples], goal=True)
    print("  where the time goes:")
    for key, label in STEPS.items():
        _row(f"  {label}", [sample[key] for sample in samples if key in sample], goal=False)


def _row(label: str, values: list[float], goal: bool) -> None:
    """``values``' median and p95, each against ``LIVE_GOAL_MS`` when they are a ``goal``."""
    shown = ""
    for figure in (statistics.median(values), percentile(values, 0.95)):
        verdict = ("ok" if figure <= LIVE_GOAL_MS else "MISSED") if goal else ""
        shown += f" {figure:6.1f} {verdict:>6}"
    print(f"  {label:50}{shown}".rstrip())


def main(rows: int, requests: int, executions: int) -> None:
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
            if executions:
                live(url, executions)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--live", type=int, default=20, help="executions followed live (0: none)")
    options = parser.parse_args()
    main(options.rows, options.requests, options.live)
