"""The built-in actions under ``loopengine daemon``, each from a loop file of one daemon, each
run queued by ``loopengine trigger --wait``, which reports it as ``show`` does: a real child process
(and its process group killed at the deadline), real HTTP servers on 127.0.0.1 (one allowed, one
not), files rolled back on a failed assertion, a metric point, and a scripted LLM node."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopengine.testing import FakeLLMServer, reply
from loopengine.triggers import verify_delivery, webhook_key
from tests.builtins.http_server import HostileServer, serving
from tests.daemon.conftest import Daemon, Workspace
from tests.waiting import alive, wait_until

HOOK_SECRET = "whsec_" + base64.b64encode(b"d" * 24).decode()
IGNORES_TERM_AND_FORKS = 'trap "" TERM; sleep 1000 & echo $$ $! > pids; wait'
"""A hostile child: it ignores SIGTERM, and so does the process it forks."""

LOOPS = {
    "greet": """\
id: greet
trigger: {type: manual}
params:
  name: {type: string}
decide: {decision_tree: [], fallback_action: greet}
act:
  actions:
    - action_id: greet
      skill_id: shell
      params: {command: [printf, '%s', '${ input.name }']}
validate:
  assertions:
    - expression: act.greet.result.stdout == input.name
""",
    "hang": f"""\
id: hang
trigger: {{type: manual}}
decide: {{decision_tree: [], fallback_action: hang}}
act:
  actions:
    - action_id: hang
      skill_id: shell
      params: {{command: [sh, -c, '{IGNORES_TERM_AND_FORKS}'], timeout_s: 2}}
""",
    "ping": """\
id: ping
trigger: {type: manual}
params:
  url: {type: string}
decide: {decision_tree: [], fallback_action: ping}
act:
  actions:
    - action_id: ping
      skill_id: http.request
      params: {url: '${ input.url }', headers: {X-Loop: '${ loop.id }'}}
validate:
  assertions:
    - expression: 'act.ping.result.status == `200`'
""",
    "alert": """\
id: alert
trigger: {type: manual}
params:
  url: {type: string}
decide: {decision_tree: [], fallback_action: alert}
act:
  actions:
    - action_id: alert
      skill_id: webhook.send
      params:
        url: '${ input.url }'
        payload: {loop: alert, state: down}
        secret: '${ secret.HOOK_SECRET }'
""",
    "tidy": """\
id: tidy
trigger: {type: manual}
params:
  dir: {type: string}
  limit: {type: integer}
decide: {decision_tree: [], fallback_action: write}
act:
  actions:
    - action_id: write
      skill_id: file.write
      params: {path: '${ input.dir }/report.txt', content: new}
      rollback_skill: file.undo
    - action_id: move
      on: [write]
      skill_id: file.move
      params: {source: '${ input.dir }/a.log', target: '${ input.dir }/archive/a.log'}
      rollback_skill: file.undo
    - action_id: delete
      on: [write]
      skill_id: file.delete
      params: {path: '${ input.dir }/b.log'}
      rollback_skill: file.undo
validate:
  assertions:
    - expression: 'act.write.result.size <= input.limit'
  auto_rollback: {enabled: true}
""",
    "count": """\
id: count
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: count}
act:
  actions:
    - action_id: count
      skill_id: metrics.record
      params: {name: disk.freed, value: 42, labels: {by: '${ loop.id }'}}
""",
    "draft": """\
id: draft
trigger: {type: manual}
decide: {decision_tree: [], fallback_action: draft}
act:
  actions:
    - action_id: draft
      skill_id: llm.complete
      params: {prompt: Draft a maintenance notice., max_tokens: 64}
validate:
  assertions:
    - expression: "act.draft.result.completion.text == 'Maintenance at noon.'"
""",
}


@dataclass
class Served:
    workspace: Workspace
    daemon: Daemon
    allowed: HostileServer
    refused: HostileServer
    llm: FakeLLMServer

    @property
    def data(self) -> Path:
        """``actions.root``."""
        return self.workspace.root / "data"

    def run(self, loop_id: str, **inputs: str) -> dict[str, Any]:
        """``loop_id`` run once by the daemon, as ``trigger --wait`` reports it (as ``show``)."""
        given = [arg for name, value in inputs.items() for arg in ("--input", f"{name}={value}")]
        done = self.workspace.cli("trigger", loop_id, "--wait", "--json", *given, check=False)
        execution: dict[str, Any] = json.loads(done.stdout)
        return execution


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One daemon serving ``LOOPS``, its actions under ``data/``, allowed to reach one HTTP
    server on 127.0.0.1 and not another, with a cluster of one scripted node."""
    root = tmp_path_factory.mktemp("actions")
    (root / "loops").mkdir()
    (root / "data").mkdir()
    for loop_id, text in LOOPS.items():
        (root / "loops" / f"{loop_id}.yaml").write_text(text)
    with serving() as allowed, serving() as refused, FakeLLMServer() as llm:
        (root / "loopengine.yaml").write_text(
            "daemon: {port: 0}\n"
            f"actions: {{root: data, http: {{allow: ['127.0.0.1:{allowed.port}']}}}}\n"
            f"cluster:\n  nodes:\n    OL1: {{base_url: '{llm.base_url}', model: ol1}}\n"
            "  routing:\n    default: [OL1]\n"
        )
        env = {**os.environ, "HOOK_SECRET": HOOK_SECRET, "NO_COLOR": "1"}
        env["LOOPENGINE_DATABASE"] = f"sqlite:///{root / 'store.db'}"
        for name in ("LOOPENGINE_CONFIG", "LOOPENGINE_API_TOKEN"):
            env.pop(name, None)
        workspace = Workspace(root, env)
        daemon = workspace.start()
        try:
            yield Served(workspace, daemon, allowed, refused, llm)
        finally:
            assert daemon.stop() == 0


def _call(execution: dict[str, Any], index: int = 0) -> dict[str, Any]:
    [act] = [phase for phase in execution["phases"] if phase["phase"] == "act"]
    call: dict[str, Any] = act["data"]["calls"][index]
    return call


def test_shell_runs_a_child_with_a_value_as_one_argument(served: Served) -> None:
    name = "$(touch pwned); *"
    execution = served.run("greet", name=name)
    assert execution["outcome"] == "completed"
    assert _call(execution)["result"]["stdout"] == name
    assert not (served.data / "pwned").exists()


def test_shell_kills_the_childs_process_group_at_its_deadline(served: Served) -> None:
    execution = served.run("hang")
    assert execution["outcome"] == "failed"
    assert "ran past its timeout of 2 s and was killed" in _call(execution)["error"]
    pids = [int(pid) for pid in (served.data / "pids").read_text().split()]
    try:
        wait_until(lambda: not any(alive(pid) for pid in pids), f"{pids} still run")
    except AssertionError:
        for pid in pids:  # the action left them running: the test leaves nothing behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        raise


def _verified(delivery: dict[str, Any]) -> str:
    """The delivery id, as a receiver verifies a Standard Webhooks request."""
    headers = httpx.Headers(delivery["headers"])
    return verify_delivery(
        "standard",
        webhook_key(HOOK_SECRET),
        headers,
        delivery["body"].encode(),
        now=time.time(),
        tolerance_s=300,
    )


def test_http_request_calls_an_allowed_endpoint_and_records_its_answer(served: Served) -> None:
    execution = served.run("ping", url=served.allowed.url("/echo"))
    assert execution["outcome"] == "completed"
    result = _call(execution)["result"]
    assert (result["status"], result["body"]["method"]) == (200, "GET")
    [seen] = [d for d in served.allowed.seen if d["path"] == "/echo"]
    assert seen["headers"]["X-Loop"] == "ping"


def test_http_request_to_a_host_not_allowed_fails_saying_how_to_allow_it(served: Served) -> None:
    execution = served.run("ping", url=served.refused.url("/echo"))
    assert execution["outcome"] == "failed"
    host = f"127.0.0.1:{served.refused.port}"
    assert execution["error"] == (
        f"http.request GET {served.refused.url('/echo')}: {host} is a loopback, private or "
        f"metadata address (127.0.0.1); to reach it, list '{host}' under actions.http.allow in "
        "loopengine.yaml"
    )
    assert served.refused.seen == []


def test_webhook_send_posts_a_delivery_the_receiver_verifies(served: Served) -> None:
    execution = served.run("alert", url=served.allowed.url("/hook"))
    assert execution["outcome"] == "completed"
    [delivery] = [d for d in served.allowed.seen if d["path"] == "/hook"]
    assert json.loads(delivery["body"]) == {"loop": "alert", "state": "down"}
    assert _verified(delivery).startswith("msg_")
    assert HOOK_SECRET not in json.dumps(execution)


def _tree(folder: Path) -> dict[str, str]:
    """``folder``'s files with their text, and its folders (``/``)."""
    return {
        str(path.relative_to(folder)): path.read_text() if path.is_file() else "/"
        for path in sorted(folder.rglob("*"))
    }


def _tidied(served: Served, folder: str, limit: str) -> tuple[dict[str, Any], Path]:
    """``tidy`` run on ``data/folder``, which holds ``report.txt``, ``a.log`` and ``b.log``."""
    path = served.data / folder
    path.mkdir()
    for name in ("report.txt", "a.log", "b.log"):
        (path / name).write_text(f"old {name}")
    return served.run("tidy", dir=folder, limit=limit), path


def test_file_actions_write_move_and_delete(served: Served) -> None:
    execution, folder = _tidied(served, "kept", limit="10")
    assert execution["outcome"] == "completed"
    assert _tree(folder) == {"archive": "/", "archive/a.log": "old a.log", "report.txt": "new"}


def test_a_failed_assertion_rolls_the_file_actions_back(served: Served) -> None:
    execution, folder = _tidied(served, "undone", limit="1")
    assert execution["outcome"] == "rolled_back"
    assert _tree(folder) == {
        "a.log": "old a.log",
        "b.log": "old b.log",
        "report.txt": "old report.txt",
    }


def test_metrics_record_writes_a_point_that_metrics_lists(served: Served) -> None:
    assert served.run("count")["outcome"] == "completed"
    [series] = served.workspace.json("metrics", "list", "--name", "disk.*")["metrics"]
    assert (series["name"], series["value"], series["points"]) == ("disk.freed", 42.0, 1)


def test_llm_complete_asks_the_clusters_node_and_records_its_answer(served: Served) -> None:
    served.llm.script("ol1", [reply("Maintenance at noon.")])
    execution = served.run("draft")
    assert execution["outcome"] == "completed"
    assert _call(execution)["result"]["completion"]["text"] == "Maintenance at noon."
    [asked] = served.llm.requests
    assert asked["messages"] == [{"role": "user", "content": "Draft a maintenance notice."}]
