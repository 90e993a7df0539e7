"""``loopengine run`` with traces, as a user runs it (a process of its own): spans exported by
OTLP/HTTP to a collector on 127.0.0.1 before the command exits, the endpoint taken from the
config or the environment, an unreachable collector costing the run nothing, and OpenTelemetry
never imported when nothing asks for traces."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.otlp import Collector, collecting
from tests.test_cli_run import LOOP, SKILLS
from tests.waiting import DEADLINE_S

WITHOUT_OPENTELEMETRY = (
    "import sys; sys.modules['opentelemetry'] = None; from loopengine.cli import run; run()"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "skills.py").write_text(SKILLS)
    (tmp_path / "counter.yaml").write_text(LOOP)
    return tmp_path


def _configure(workspace: Path, tracing: str = "") -> None:
    (workspace / "loopengine.yaml").write_text(f"plugins: [./skills.py]\n{tracing}")


def _run(
    workspace: Path, *python: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``loopengine run counter.yaml --json`` in ``workspace`` (through ``python`` options or
    code when given), with no OpenTelemetry variable but those of ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LOOPENGINE_"))}
    command = list(python) or ["-m", "loopengine"]
    return subprocess.run(
        [sys.executable, *command, "run", "counter.yaml", "--json"],
        cwd=workspace,
        env={**clean, "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound a moment ago, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _exported_tree(collector: Collector) -> None:
    [execution] = collector.named("execution counter")
    [skill] = collector.named("skill count")
    [analyze] = collector.named("phase analyze")
    assert execution.parent_span_id == ""
    assert analyze.parent_span_id == execution.span_id
    assert skill.parent_span_id == analyze.span_id
    assert execution.attributes["loopengine.loop.id"] == "counter"
    assert execution.attributes["loopengine.outcome"] == "completed"


def test_run_exports_its_spans_to_the_configured_collector_before_it_exits(
    workspace: Path,
) -> None:
    with collecting() as collector:
        tracing = f"tracing: {{otlp_endpoint: '{collector.endpoint}', service_name: nightly}}\n"
        _configure(workspace, tracing)
        done = _run(workspace)
        assert done.returncode == 0, done.stderr
        _exported_tree(collector)
        [execution] = collector.named("execution counter")
        assert execution.service == "nightly"
        assert (
            execution.attributes["loopengine.execution.id"]
            == json.loads(done.stdout)["execution_id"]
        )


def test_run_exports_to_the_collector_otel_exporter_otlp_endpoint_names(
    workspace: Path,
) -> None:
    _configure(workspace)
    with collecting() as collector:
        done = _run(workspace, env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint})
        assert done.returncode == 0, done.stderr
        _exported_tree(collector)


def test_a_sample_ratio_of_zero_exports_no_span(workspace: Path) -> None:
    with collecting() as collector:
        _configure(
            workspace, f"tracing: {{otlp_endpoint: '{collector.endpoint}', sample_ratio: 0}}\n"
        )
        done = _run(workspace)
        assert done.returncode == 0, done.stderr
        assert collector.received() == []


def test_an_unreachable_collector_fails_no_run(workspace: Path) -> None:
    _configure(workspace, f"tracing: {{otlp_endpoint: 'http://127.0.0.1:{_closed_port()}'}}\n")
    done = _run(workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "completed"
    assert "Traceback" not in done.stderr


def test_traces_asked_for_without_opentelemetry_are_a_one_line_error_naming_the_extra(
    workspace: Path,
) -> None:
    _configure(workspace, "tracing:\n  otlp_endpoint: http://127.0.0.1:4318\n")
    done = _run(workspace, "-c", WITHOUT_OPENTELEMETRY)
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        "error: loopengine.yaml:3:18: tracing.otlp_endpoint: traces asked for, but "
        "OpenTelemetry is not installed: pip install 'loopengine[otel]'"
    ]


def test_the_environment_alone_asking_for_traces_without_opentelemetry_runs_without_them(
    workspace: Path,
) -> None:
    _configure(workspace)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    done = _run(workspace, "-c", WITHOUT_OPENTELEMETRY, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "completed"
    assert done.stderr == ""


def test_run_without_tracing_imports_no_opentelemetry(workspace: Path) -> None:
    _configure(workspace)
    done = _run(workspace, "-X", "importtime", "-m", "loopengine")
    assert done.returncode == 0, done.stderr
    assert "import time:" in done.stderr
    assert "opentelemetry" not in done.stderr
