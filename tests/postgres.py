"""A throw-away PostgreSQL server on 127.0.0.1 for the tests that need one (Debian's packages)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg.sql
import pytest
import sqlalchemy as sa

import loopengine.store._fastpath as fastpath
from loopengine.store import create_engine, migrate

__all__ = [
    "PostgresServer",
    "generic_plan",
    "migrated_engine",
    "postgres_cluster",
    "postgres_server",
    "shared_postgres",
]


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed: apt-get install postgresql (the CI script does)"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class PostgresServer:
    """A private server's data folder and port; ``stop``/``start``/``restart`` cut and restore
    it under the clients (``-m immediate``: as a crash would). ``fsync`` off unless a bench
    measures what a real server costs."""

    def __init__(self, home: Path, port: int, fsync: bool = False) -> None:
        self.home, self.port, self.fsync = home, port, fsync
        self.url = self._url("postgres")
        self._migrated: str | None = None

    def _url(self, database: str) -> str:
        return f"postgresql+psycopg://loopengine@127.0.0.1:{self.port}/{database}"

    def _execute(self, statement: str) -> None:
        engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql(statement)
        finally:
            engine.dispose()

    @contextmanager
    def database(self, migrated: bool = False) -> Iterator[str]:
        """A new database of its own (with loopengine's schema if ``migrated``): its URL, dropped
        afterwards with whatever is still connected to it."""
        template = self._migrated_template() if migrated else "template0"
        name = f"test_{uuid.uuid4().hex}"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        try:
            yield self._url(name)
        finally:
            self._execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    def _migrated_template(self) -> str:
        """A database with loopengine's schema, made once, that migrated databases copy."""
        if self._migrated is None:
            self._execute('CREATE DATABASE "migrated" TEMPLATE "template0"')
            engine = create_engine(self._url("migrated"))
            try:
                with engine.begin() as connection:
                    migrate(connection)
            finally:
                engine.dispose()
            self._migrated = "migrated"
        return self._migrated

    def _ctl(self, *args: str, check: bool = True) -> None:
        options = f"-p {self.port} -k {self.home / 'sockets'} -c listen_addresses=127.0.0.1"
        command = [str(_bindir() / "pg_ctl"), "-D", str(self.home / "data"), *args]
        if args[0] != "stop":
            fsync = "on" if self.fsync else "off"
            command += ["-o", f"{options} -c fsync={fsync}", "-w", "-l", str(self.home / "log")]
        subprocess.run(
            _as_server_user(command),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=check,
        )

    def start(self) -> None:
        self._ctl("start")

    def stop(self, check: bool = True) -> None:
        self._ctl("stop", "-m", "immediate", check=check)

    def restart(self) -> None:
        self._ctl("restart", "-m", "immediate")


@contextmanager
def postgres_cluster(fsync: bool = False) -> Iterator[PostgresServer]:
    """Start a private server; yields it, and removes everything afterwards."""
    bindir = _bindir()
    home = Path(tempfile.mkdtemp(prefix="loopengine-pg-"))
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        for path in (home, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
    subprocess.run(
        _as_server_user(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "loopengine",
                "-A",
                "trust",
                "-E",
                "UTF8",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=True,
    )
    server = PostgresServer(home, _free_port(), fsync)
    server.start()
    try:
        yield server
    finally:
        server.stop(check=False)
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def postgres_server(fsync: bool = False) -> Iterator[str]:
    """Start a private server; yields its SQLAlchemy URL and removes everything afterwards."""
    with postgres_cluster(fsync) as server:
        yield server.url


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[PostgresServer]:
    """One private server per test process, on which tests take databases of their own
    (``PostgresServer.database``: a database is made in milliseconds, a server in seconds); tests
    that stop, restart or configure a server start their own (``postgres_cluster``)."""
    with postgres_cluster() as server:
        yield server


@contextmanager
def migrated_engine(server: PostgresServer) -> Iterator[sa.Engine]:
    """An engine on a new database of ``server`` that has loopengine's schema."""
    with server.database(migrated=True) as url:
        built = create_engine(url)
        try:
            yield built
        finally:
            built.dispose()


def generic_plan(connection: sa.Connection, statement: Any, bound: dict[str, Any]) -> str:
    """PostgreSQL's generic plan (``EXPLAIN``) of ``statement`` as the fast path prepares it, run
    with ``bound``: the plan a connection keeps once it ran the statement a few times, made
    without the values in view."""
    connection.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
    prepared = fastpath._prepare(connection, statement, frozenset(bound))
    connection.exec_driver_sql(f"PREPARE planned AS {prepared.sql}")
    driver = connection.connection.driver_connection
    values = prepared.positional(bound)
    arguments = ", ".join(psycopg.sql.Literal(value).as_string(driver) for value in values)
    explained = connection.exec_driver_sql(f"EXPLAIN EXECUTE planned({arguments})")
    return "\n".join(explained.scalars())
