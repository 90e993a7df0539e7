"""Read-only queries on PostgreSQL (detect's ``database`` source, the ``query_db`` tool): a
read-only transaction with a statement timeout, and a role granted only ``SELECT`` keeps a model
away from the server's files, settings and other tables — as the README tells users to set up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from loopengine.builtins import builtin_tools
from loopengine.errors import StorageError
from loopengine.llm import Toolbox
from loopengine.store import read_only_query
from tests.postgres import postgres_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A private server with a table ``pages`` and a table ``secrets``; the role ``reader``
    may only ``SELECT`` from ``pages``."""
    with postgres_server() as url:
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "CREATE TABLE pages (url text); INSERT INTO pages VALUES ('/a'), ('/b');"
                "CREATE TABLE secrets (token text); INSERT INTO secrets VALUES ('s3cr3t');"
                "CREATE SEQUENCE counter;"
                "CREATE ROLE reader LOGIN; GRANT SELECT ON pages TO reader"
            )
        engine.dispose()
        yield url


def _as_reader(url: str) -> str:
    return url.replace("//loopengine@", "//reader@")


def _query(url: str, sql: str, timeout_s: float = 5.0) -> list[dict[str, object]]:
    return read_only_query(url, lambda _dialect: sql, 100, timeout_s=timeout_s)[1]


def test_a_query_reads(server: str) -> None:
    assert _query(server, "SELECT url FROM pages ORDER BY url") == [{"url": "/a"}, {"url": "/b"}]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT nextval('counter')",
        "WITH gone AS (DELETE FROM pages RETURNING url) SELECT * FROM gone",
        "SELECT set_config('transaction_read_only', 'off', true)",
    ],
)
def test_nothing_writes_even_through_a_select(server: str, sql: str) -> None:
    with pytest.raises(StorageError, match=r"read-only transaction|read-write mode"):
        _query(server, sql)
    assert len(_query(server, "SELECT url FROM pages")) == 2


def test_a_slow_query_is_stopped_at_its_deadline(server: str) -> None:
    started = time.monotonic()
    with pytest.raises(StorageError, match="statement timeout"):
        _query(server, "SELECT pg_sleep(30)", timeout_s=0.5)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT token FROM secrets",
        "SELECT pg_read_file('/etc/hostname')",
        "SELECT * FROM pg_ls_dir('.')",
        "SELECT pg_reload_conf()",
    ],
)
def test_a_select_only_role_reaches_nothing_else(server: str, sql: str) -> None:
    with pytest.raises(StorageError, match="permission denied"):
        _query(_as_reader(server), sql)


async def test_query_db_on_postgresql_reads_what_its_role_may(server: str, tmp_path: Path) -> None:
    toolbox = Toolbox(builtin_tools(tmp_path, _as_reader(server)))
    read = await toolbox.run("query_db", {"sql": "-- pages\nSELECT url, ';' AS s FROM pages"})
    assert read.result["count"] == 2
    refused = await toolbox.run("query_db", {"sql": "SELECT token FROM secrets"})
    assert "permission denied" in (refused.error or "")
