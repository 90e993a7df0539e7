"""The seed's seo_audit_loop, verbatim, end to end as a user runs it: PostgreSQL holds the pages
its database source reads and, as ``supabase``, its ``seo_audit_report`` artifact; Redis its
``loop_metrics`` artifact; the CLI records a metric, sets the flag, runs, approves and shows."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from loopengine.cli import main
from tests.conftest import SEED_DIR
from tests.postgres import PostgresServer
from tests.redis import RedisServer, redis_server


@pytest.fixture(scope="module")
def postgres(shared_postgres: PostgresServer) -> Iterator[str]:
    with shared_postgres.database() as url:
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "CREATE TABLE __seo_pages (url text, updated_at timestamptz DEFAULT now())"
            )
            connection.exec_driver_sql(
                "INSERT INTO __seo_pages (url, updated_at) VALUES "
                "('/a', now()), ('/b', now()), ('/old', now() - interval '3 days')"
            )
        engine.dispose()
        yield url


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def _site(broken: int) -> dict[str, Any]:
    pages = [
        {
            "url": f"/products/p{i}",
            "role": "category",
            "expected_role": "product",
            "canonical": f"/products/p{i}",
            "content": "A product page with enough words.",
        }
        for i in range(broken)
    ]
    pages.append(
        {
            "url": "/blog/x",
            "role": "article",
            "expected_role": "article",
            "canonical": None,
            "content": "Short.",
        }
    )
    return {"pages": pages}


def _workspace(
    tmp: Path, postgres: str, redis: str, plugin: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    shutil.copy(SEED_DIR / "seo_audit_loop.yaml", tmp / "seo_audit_loop.yaml")
    shutil.copy(SEED_DIR / "seo_skills.py", tmp / "seo_skills.py")
    (tmp / "site.json").write_text(json.dumps(_site(broken=12), indent=2))
    (tmp / "loopengine.yaml").write_text(
        f"plugins: [{plugin}]\n"
        f"databases: {{default: '{postgres}'}}\n"
        "storage:\n"
        f"  supabase: {postgres}\n"
        f"  redis: {redis}\n"
    )
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("SEO_SITE", str(tmp / "site.json"))
    monkeypatch.setenv("SEO_SKILLS", str(tmp / "seo_skills.py"))
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    return tmp


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _until_approval(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["metrics", "record", "seo.violations.count", "12"]) == 0
    assert main(["flags", "set", "seo_auto_fix", "on"]) == 0
    capsys.readouterr()
    code, waiting = _json(capsys, "run", "seo_audit_loop.yaml")
    assert (code, waiting["outcome"]) == (1, "awaiting_approval")
    assert waiting["approval"]["action"] == "auto_fix_batch"
    return str(waiting["execution_id"])


def test_the_seed_runs_all_seven_phases_after_approval(
    tmp_path: Path,
    postgres: str,
    redis: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _workspace(tmp_path, postgres, redis.url, "./seo_skills.py", monkeypatch)
    execution_id = _until_approval(capsys)
    assert main(["approve", execution_id, "--note", "go ahead"]) == 0
    capsys.readouterr()
    code, record = _json(capsys, "show", execution_id)
    assert (code, record["outcome"]) == (0, "completed")
    phases = {p["phase"]: p for p in record["phases"]}
    assert list(phases) == ["detect", "analyze", "decide", "act", "validate", "learn", "store"]
    assert all(p["success"] for p in phases.values())
    assert phases["detect"]["data"]["sources"]["__seo_pages"]["count"] == 2
    assert record["decision"]["action"] == "auto_fix_batch"
    assert record["decision"]["reason"] == "rule 1 holds: violations.error.count > 10"
    actions = phases["act"]["data"]["actions"]
    assert [(a["action_id"], a["dry_run"]) for a in actions] == [
        ("fix_role_violations", True),
        ("fix_role_violations", False),
    ]
    assert phases["validate"]["data"]["assertions"][0]["passed"] is True
    assert phases["learn"]["data"]["score"] == 1.0
    assert phases["learn"]["data"]["samples"] == 1
    assert record["approval"]["status"] == "approved"
    assert {a["name"] for a in record["artifacts"]} == {"seo_audit_report", "loop_metrics"}
    stored = redis.client().get(f"loopengine:artifact:seo_audit_loop:{execution_id}:loop_metrics")
    assert json.loads(stored)["type"] == "metric"
    engine = sa.create_engine(postgres)
    with engine.connect() as connection:
        report = connection.execute(
            sa.text("SELECT name, type FROM loopengine_artifacts WHERE execution_id = :id"),
            {"id": execution_id},
        )
        assert report.all() == [("seo_audit_report", "audit")]
    engine.dispose()
    assert phases["store"]["data"]["audit"]["decision_made"] == "auto_fix_batch"
    site = json.loads((tmp_path / "site.json").read_text())
    assert all(p["role"] == p["expected_role"] for p in site["pages"])


def test_a_fix_that_makes_things_worse_is_rolled_back(
    tmp_path: Path,
    postgres: str,
    redis: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    worse = Path(__file__).with_name("seo_worse_skills.py")
    _workspace(tmp_path, postgres, redis.url, str(worse), monkeypatch)
    original = (tmp_path / "site.json").read_text()
    execution_id = _until_approval(capsys)
    code = main(["approve", execution_id])
    capsys.readouterr()
    _, record = _json(capsys, "show", execution_id)
    assert code == 1
    assert record["outcome"] == "rolled_back"
    validate = next(p for p in record["phases"] if p["phase"] == "validate")
    assert validate["data"]["retries"] == 1
    assert validate["data"]["rollback"]["rolled_back"] == ["fix_role_violations"] * 2
    assert json.loads((tmp_path / "site.json").read_text()) == json.loads(original)
