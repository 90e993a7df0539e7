"""What autolearn learned, on one page: scores per node and category, now and over time, the
routing, every change (instructions with their diff, rollbacks) and what the chat remembers;
node names, reasons, instructions and summaries shown as text."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from loopengine.console._autolearn import Line, charts
from loopengine.console._drawing import instructions_diffs, polyline
from loopengine.store import write_once
from loopengine.store.autolearn import (
    HistoryEntry,
    ScorePoint,
    apply_prompt,
    insert_samples,
    put_routings,
    record_scores,
    roll_back_prompts,
)
from loopengine.store.memory import add_exchange, put_summary
from tests.api.test_chat import TOKEN as CLUSTER_TOKEN
from tests.api.test_chat import _start
from tests.console.conftest import IMAGE, SCRIPT, Console, Served

NODE = f"M1{IMAGE}"
"""A node whose name is hostile."""
USER = "ada"


def test_each_category_is_a_chart_with_a_line_per_node_oldest_first() -> None:
    points = [
        ScorePoint("code", "M1", 0.2, 1.0),
        ScorePoint("chat", "OL1", 0.9, 1.0),
        ScorePoint("code", "M1", 0.6, 2.0),
        ScorePoint("code", "OL1", 0.4, 2.0),
    ]
    found = charts(points)
    assert [chart.category for chart in found] == ["chat", "code"]
    assert found[1].lines == [
        Line("M1", 0, polyline([0.2, 0.6], 0.0, 1.0), 0.6),
        Line("OL1", 1, polyline([0.4], 0.0, 1.0), 0.4),
    ]


def _entry(entry_id: int, kind: str, **detail: object) -> HistoryEntry:
    return HistoryEntry(entry_id, kind, "code", dict(detail), None, 0.0)


def test_new_instructions_are_diffed_against_the_version_they_replaced() -> None:
    entries = [
        _entry(3, "prompt", **{"from": 1, "to": 2, "text": "Be brief.\nCite sources."}),
        _entry(2, "rollback", **{"from": 1, "to": 0}),
        _entry(1, "prompt", **{"from": 0, "to": 1, "text": "Be brief."}),
    ]
    assert instructions_diffs(entries) == {
        3: ["--- version 1", "+++ version 2", "@@ -1 +1,2 @@", " Be brief.", "+Cite sources."]
    }


@pytest.fixture(scope="module")
def learned(served: Served) -> None:
    """Two tuning cycles' scores, a routing change, two instructions versions (the second
    rolled back) and a user remembered, written as the autolearn loops write them."""
    url, now = f"sqlite:///{served.workspace.database}", time.time()
    sample = {"execution_id": "e" * 32, "session_id": None, "category": "code", "mode": "simple",
              "seconds": 1.0, "output_tokens": 10, "success": True, "message": "m", "reply": "r",
              "created_at": now}  # fmt: skip
    write_once(url, insert_samples, [{**sample, "node": NODE}, {**sample, "node": "OL1"}])
    for score in (0.25, 0.75):
        row = {"node": NODE, "score": score, "speed": 1.0, "quality": 0.5, "reliability": 1.0,
               "samples": 2}  # fmt: skip
        write_once(url, record_scores, {"code": [row]}, None, now)
    change = {"from": ["OL1", NODE], "to": [NODE, "OL1"], "why": f"faster {SCRIPT}"}
    write_once(url, put_routings, [("code", [NODE, "OL1"], change)], f"faster {SCRIPT}", None, now)
    first = write_once(
        url, apply_prompt, "code", "Be brief.", parent=0, baseline=None, reason="weak",
        execution_id=None, now=now,
    )  # fmt: skip
    assert first is not None
    second = write_once(
        url, apply_prompt, "code", f"Be brief.\n{SCRIPT}", parent=first, baseline=0.5,
        reason="weaker", execution_id=None, now=now,
    )  # fmt: skip
    assert second is not None
    write_once(url, roll_back_prompts, [("code", second, f"worse {IMAGE}")], None, now)
    exchange = {"session_id": "s", "category": "code", "message": "m", "reply": "r"}
    write_once(url, add_exchange, USER, exchange, 10, now)
    write_once(url, put_summary, USER, f"Likes {SCRIPT}", NODE, 1, now)


@pytest.fixture
def page(learned: None, console: Console) -> str:
    answered = console.http.get("/console/autolearn")
    assert answered.status_code == 200
    return answered.text


def test_nothing_hostile_is_markup(page: str) -> None:
    assert SCRIPT not in page
    assert IMAGE not in page
    assert "<code>M1&lt;img src=x onerror=alert(1)&gt;</code>" in page


def test_scores_per_node_and_category_are_listed(page: str) -> None:
    section = page[page.index('id="scores"') : page.index('id="over-time"')]
    assert re.search(r"<td>code</td><td><code>M1&lt;img[^<]*</code></td>\s*<td><strong>", section)
    assert "<td><code>OL1</code></td>" in section


def test_scores_over_time_are_drawn_per_category(page: str) -> None:
    section = page[page.index('id="over-time"') : page.index('id="routing"')]
    assert "<figcaption>code</figcaption>" in section
    assert f'points="{polyline([0.25, 0.75], 0.0, 1.0)}"' in section
    assert "now 0.750" in section


def test_without_a_cluster_no_category_is_routed(page: str) -> None:
    assert "No cluster is configured: the chat routes nothing." in page


def test_every_change_is_listed_instructions_with_their_diff(page: str) -> None:
    section = page[page.index('id="history"') : page.index('id="memory"')]
    assert "<strong>routing</strong> of code" in section
    assert "&#34;faster &lt;script&gt;" in section
    assert "Instructions version 0 → 1: weak" in section
    assert "Instructions version 1 → 2: weaker" in section
    assert '<span class="d-add">+&lt;script&gt;document.title=' in section
    assert "rolled back to 1: worse &lt;img src=x onerror=alert(1)&gt;" in section


def test_what_the_chat_remembers_is_shown_per_user(page: str) -> None:
    section = page[page.index('id="memory"') :]
    assert f"<td><code>{USER}</code></td>" in section
    assert "Likes &lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in section


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """The console of a daemon whose cluster routes ``default`` and ``trivia`` (no node is ever
    called), ``trivia`` tuned by autotune; logged in."""
    root = tmp_path_factory.mktemp("clustered")
    nodes = "\n".join(
        f"    {name}: {{base_url: 'http://127.0.0.1:9', model: {name.lower()}}}"
        for name in ("OL1", "M1")
    )
    config = (
        'daemon: {port: 0, token: "${ secret.API_TOKEN }"}\n'
        f"cluster:\n  nodes:\n{nodes}\n  routing:\n    default: [OL1, M1]\n    trivia: [OL1, M1]\n"
    )
    workspace, daemon, url = _start(root, config)
    try:
        change = {"from": ["OL1", "M1"], "to": ["M1", "OL1"]}
        database = f"sqlite:///{workspace.database}"
        write_once(database, put_routings, [("trivia", ["M1", "OL1"], change)], "M1 is faster",
                   None, time.time())  # fmt: skip
        client = Served(workspace, url).client()
        assert client.login(CLUSTER_TOKEN).status_code == 303
        yield client
        client.close()
    finally:
        assert daemon.stop() == 0


def test_each_category_s_routing_says_whether_it_is_tuned_or_configured(
    clustered: Console,
) -> None:
    page = clustered.http.get("/console/autolearn").text
    section = page[page.index('id="routing"') : page.index('id="history"')]
    rows = dict(re.findall(r"<tr>\s*<td>(\w+)</td>\s*<td>(.*?)</td>\s*</tr>", section, re.S))
    assert "<code>M1</code> → <code>OL1</code></td>\n    <td>tuned (version 1," in rows["trivia"]
    assert "M1 is faster" in rows["trivia"]
    assert "<code>OL1</code> → <code>M1</code></td>\n    <td>configured" in rows["default"]
