"""Secrets a daemon's loops name are masked wherever they arrive: sent back as a trigger's input,
a webhook's payload or a chat message, none is stored in any column of any table, nor served by
the API or ``history``; printed by a plugin, the daemon's log shows it masked."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from loopengine.testing import FakeLLMServer, reply
from tests.api.test_chat import Served
from tests.daemon.conftest import Workspace

SECRETS = {
    "INPUT_KEY": "sk-live-7f3a9c2e41b8d605",
    "HOOK_KEY": "hk-93b1e07d5aa24c6f",
    "CHAT_KEY": "ck-0d4e8f21b7c3a965",
    "PRINTED_KEY": "pk-5c7e1a09d3f2b846",
}
PLUGIN = """\
import sys
from loopengine import skill

@skill
def leak(ctx, **keys):
    print("the key is", keys["printed"])
    print("the key is", keys["printed"], file=sys.stderr, flush=True)
    return {"echo": keys}
"""
LOOPS = {
    "leaky": """\
id: leaky
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: leak}
act:
  actions:
    - action_id: leak
      skill_id: leak
      params:
        input: "${ secret.INPUT_KEY }"
        hook: "${ secret.HOOK_KEY }"
        chat: "${ secret.CHAT_KEY }"
        printed: "${ secret.PRINTED_KEY }"
""",
    "noted": """\
id: noted
trigger: {type: manual}
params: {note: {type: string}}
decide: {decision_tree: [], fallback_action: log_only}
""",
    "hooked": """\
id: hooked
trigger: {type: webhook, config: {path: incoming}}
decide: {decision_tree: [], fallback_action: log_only}
""",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A daemon serving ``LOOPS`` (``leaky`` names every secret of ``SECRETS``, not yet read)
    with the plugin ``leak``, and a cluster of one scripted node."""
    root = tmp_path_factory.mktemp("secrets")
    (root / "loops").mkdir()
    for loop_id, text in LOOPS.items():
        (root / "loops" / f"{loop_id}.yaml").write_text(text)
    (root / "leaky_skills.py").write_text(PLUGIN)
    with FakeLLMServer() as llm:
        (root / "loopengine.yaml").write_text(
            "daemon: {port: 0}\nplugins: [./leaky_skills.py]\n"
            f"cluster:\n  nodes:\n    OL1: {{base_url: '{llm.base_url}', model: ol1}}\n"
            "  routing:\n    default: [OL1]\nautolearn: {explore: 0}\n"
        )
        env = {**os.environ, **SECRETS, "NO_COLOR": "1"}
        env["LOOPENGINE_DATABASE"] = f"sqlite:///{root / 'store.db'}"
        for name in ("LOOPENGINE_CONFIG", "LOOPENGINE_API_TOKEN"):
            env.pop(name, None)
        workspace = Workspace(root, env)
        daemon = workspace.start()
        api = str(daemon.wait_for(lambda line: line.get("kind") == "ready")["api"])
        try:
            yield Served(workspace, daemon, api, llm)
        finally:
            assert daemon.stop() == 0


def _ended(api: str, loop_id: str) -> list[dict[str, Any]]:
    """``loop_id``'s executions as ``GET /executions/{id}`` serves them, once one has ended."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = httpx.get(f"{api}/executions", params={"loop_id": loop_id}, timeout=10).json()
        if any(row["outcome"] for row in listed["executions"]):
            ids = [row["execution_id"] for row in listed["executions"]]
            return [httpx.get(f"{api}/executions/{i}", timeout=10).json() for i in ids]
        time.sleep(0.1)
    raise AssertionError(f"{loop_id} never ended")


def _stored(served: Served) -> str:
    """Every value of every column of every table of the store, as text."""
    with sqlite3.connect(f"file:{served.workspace.database}?mode=ro", uri=True) as connection:
        names = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [name for (name,) in names]
        rows = [repr(row) for t in tables for row in connection.execute(f'SELECT * FROM "{t}"')]
    return "\n".join(rows)


def _served_back(served: Served, loop_id: str) -> str:
    """What the API and ``history --json`` serve of ``loop_id``'s executions."""
    executions = repr(_ended(served.api, loop_id))
    listed = httpx.get(f"{served.api}/executions", timeout=10).text
    return "\n".join([executions, listed, served.workspace.cli("history", "--json").stdout])


def test_a_secret_sent_as_a_trigger_input_is_neither_stored_nor_served(served: Served) -> None:
    secret = SECRETS["INPUT_KEY"]
    inputs = {"inputs": {"note": f"the key is {secret}"}}
    assert httpx.post(f"{served.api}/loops/noted/trigger", json=inputs, timeout=10).is_success
    assert secret not in _served_back(served, "noted")
    assert secret not in _stored(served)


def test_a_secret_sent_as_a_webhook_payload_is_neither_stored_nor_served(served: Served) -> None:
    secret = SECRETS["HOOK_KEY"]
    payload = {"key": secret, secret: ["nested", secret]}
    assert httpx.post(f"{served.api}/hooks/incoming", json=payload, timeout=10).is_success
    assert secret not in _served_back(served, "hooked")
    assert secret not in _stored(served)


def test_a_secret_sent_as_a_chat_message_is_neither_stored_nor_served(served: Served) -> None:
    secret = SECRETS["CHAT_KEY"]
    served.llm.script("ol1", [reply("Noted.")])
    message = {"message": f"keep {secret} for me", "mode": "simple", "user": "ada"}
    answered = httpx.post(f"{served.api}/chat", json=message, timeout=30)
    assert answered.status_code == 200
    assert secret not in answered.text
    assert secret not in _served_back(served, "reflexive_chat")
    assert secret not in _stored(served)


def test_a_secret_a_plugin_prints_is_masked_in_the_daemons_log(served: Served) -> None:
    assert httpx.post(f"{served.api}/loops/leaky/trigger", json={}, timeout=10).is_success
    _ended(served.api, "leaky")
    printed = [line for line in served.daemon.lines() if "the key is" in line.get("message", "")]
    assert [line["message"] for line in printed] == ["the key is ***"] * 2
    assert not any(secret in served.daemon.log.read_text() for secret in SECRETS.values())
