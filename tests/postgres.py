"""A throw-away PostgreSQL server on 127.0.0.1 for the tests that need one (Debian's packages)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from loopengine.store import create_engine, migrate

__all__ = ["migrated_engine", "postgres_server"]


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


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a private server; yields its SQLAlchemy URL and removes everything afterwards."""
    bindir = _bindir()
    home = Path(tempfile.mkdtemp(prefix="loopengine-pg-"))
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        for path in (home, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
    port = _free_port()
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
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_server_user(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-w",
                "-l",
                str(home / "log"),
                "start",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=True,
    )
    try:
        yield f"postgresql+psycopg://loopengine@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def migrated_engine() -> Iterator[sa.Engine]:
    """An engine on a private server whose database has loopengine's schema."""
    with postgres_server() as url:
        built = create_engine(url)
        with built.begin() as connection:
            migrate(connection)
        try:
            yield built
        finally:
            built.dispose()
