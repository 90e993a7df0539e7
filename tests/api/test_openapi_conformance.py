"""schemathesis drives every operation of ``/openapi.json`` on a real daemon (loops of each
trigger kind, a scripted cluster, a token): no answer is a server error, none breaks the
document (status, content type, body shape), none leaks an undocumented status.

The check that every schema-valid request is accepted is left out: ids, cursors, sessions and
webhook paths are opaque strings whose valid values the document cannot list, so a 404 or a
422 for a made-up one is the right answer. Strings are generated as UTF-8 text: a lone UTF-16
surrogate is not text, and two of them sent as ``\ud8b6\ude89`` arrive as one character, so
schemathesis would count a string one character longer than it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopengine.testing import FakeLLMServer, reply
from tests.daemon.conftest import BY_HAND, ON_EVENT, Workspace

TOKEN = "s3cret-conformance-token"
HOOKED = """\
id: hooked
trigger: {type: webhook, config: {path: deploys}}
decide: {decision_tree: [], fallback_action: log_only}
"""
EXAMPLES = 25
"""Cases per operation and phase: enough to reach every branch of the bounds, in ~1 min."""


def test_every_operation_conforms_to_the_document(tmp_path: Path) -> None:
    (tmp_path / "loops").mkdir()
    for name, text in {"by_hand": BY_HAND, "on_event": ON_EVENT, "hooked": HOOKED}.items():
        (tmp_path / "loops" / f"{name}.yaml").write_text(text)
    env = {**os.environ, "LOOPENGINE_DATABASE": f"sqlite:///{tmp_path / 'store.db'}"}
    env.pop("LOOPENGINE_CONFIG", None)
    env["LOOPENGINE_API_TOKEN"] = TOKEN
    with FakeLLMServer() as llm:
        llm.script("ol1", [reply("ok")] * 10_000)
        node = f"{{base_url: '{llm.base_url}', model: ol1, timeout_s: 5}}"
        config = f"daemon: {{port: 0}}\ncluster:\n  nodes: {{OL1: {node}}}\n  chain: [OL1]\n"
        (tmp_path / "loopengine.yaml").write_text(config)
        daemon = Workspace(tmp_path, env).start()
        api = daemon.wait_for(lambda line: line.get("kind") == "ready")["api"]
        try:
            done = _schemathesis(f"{api}/openapi.json", tmp_path / "report")
        finally:
            assert daemon.stop() == 0
    report = json.loads(next((tmp_path / "report").glob("*.json")).read_text())
    assert report["failures"] == [], done.stdout[-6000:]
    assert report["errors"] == [], done.stdout[-6000:]
    assert done.returncode == 0, done.stdout[-6000:]
    print(f"schemathesis: {report['test_cases']['generated']} generated requests, no failure")


REJECTIONS = '["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]'
"""How the API may refuse a request that breaks the document: schemathesis's list plus 413, the
answer to a body over 1 MiB (a string past its maxLength can make one)."""


def _schemathesis(schema: str, reports: Path) -> subprocess.CompletedProcess[str]:
    st = Path(sys.executable).parent / "st"
    if not st.exists():
        pytest.fail("schemathesis is not installed: pip install -e '.[dev]'")
    config = reports.parent / "schemathesis.toml"
    config.write_text(f"[checks.negative_data_rejection]\nexpected-statuses = {REJECTIONS}\n")
    command = [
        str(st),
        "--config-file",
        str(config),
        "run",
        schema,
        "--header",
        f"Authorization: Bearer {TOKEN}",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        "--max-examples",
        str(EXAMPLES),
        "--seed",
        "1",
        "--generation-codec",
        "utf-8",
        "--report",
        "json",
        "--report-dir",
        str(reports),
        "--no-color",
    ]
    return subprocess.run(
        command, cwd=reports.parent, capture_output=True, text=True, timeout=600, check=False
    )
