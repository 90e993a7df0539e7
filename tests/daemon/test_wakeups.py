"""An idle daemon on PostgreSQL is woken by a notification, not by its poll: a job queued by
another process starts long before a poll of once a minute would find it, and still does after
the database restarted under the daemon."""

from __future__ import annotations

import sqlalchemy as sa

from tests.daemon.conftest import BY_HAND, Daemon, Workspace
from tests.job_rows import ALL_JOBS
from tests.postgres import PostgresServer

POLL_S = 60
"""The daemon's poll, once a minute: only a notification starts a job sooner."""
WOKEN_S = 20
"""How soon a job queued on an idle daemon starts at the latest, on a loaded machine; the poll
would take at least 48 s (``POLL_S`` less its jitter)."""


def _idle_daemon(workspace: Workspace) -> Daemon:
    """A daemon polling once a minute, serving ``by_hand``."""
    (workspace.root / "loopengine.yaml").write_text(f"daemon: {{port: 0, poll_s: {POLL_S}}}\n")
    (workspace.root / "loops" / "by_hand.yaml").write_text(BY_HAND)
    return workspace.start()


def _waited(workspace: Workspace, daemon: Daemon, url: str) -> float:
    """How long the job ``loopengine trigger`` queues (another process) waits to start."""
    job = workspace.json("trigger", "by_hand")["job_id"]
    query = sa.text(
        f"SELECT e.started_at - j.created_at FROM {ALL_JOBS} AS j "
        "JOIN executions e ON e.job_id = j.id "
        "WHERE j.id = :job"
    )
    engine = sa.create_engine(url)

    def started() -> float | None:
        with engine.connect() as connection:
            return connection.execute(query, {"job": job}).scalar()

    try:
        return daemon.wait_until(started, "the job never started")
    finally:
        engine.dispose()


def test_a_job_queued_by_another_process_wakes_an_idle_daemon(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    daemon = _idle_daemon(on_postgres)
    assert _waited(on_postgres, daemon, server.url) < WOKEN_S
    assert daemon.stop() == 0


def test_a_restarted_database_still_wakes_the_daemon(
    on_postgres: Workspace, server: PostgresServer
) -> None:
    daemon = _idle_daemon(on_postgres)
    server.restart()
    assert _waited(on_postgres, daemon, server.url) < WOKEN_S
    daemon.wait_for(lambda line: line.get("message") == "notifications arrive again")
    assert daemon.stop() == 0
