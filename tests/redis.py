"""A throw-away Redis server on 127.0.0.1 for the tests that need one (Debian's ``redis-server``),
persisting nothing: no snapshots, no append-only file, its folder removed afterwards."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.postgres import _free_port
from tests.waiting import wait_until

__all__ = ["RedisServer", "redis_server"]


class RedisServer:
    """A private server's folder and port; ``stop``/``start`` cut and restore it under the
    clients (``stop`` kills it: what it held is gone, as after a crash without persistence)."""

    def __init__(self, home: Path, port: int) -> None:
        self.home, self.port = home, port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: apt-get install redis-server")
        options = {"port": str(self.port), "bind": "127.0.0.1", "dir": str(self.home)}
        options |= {"save": "", "appendonly": "no", "daemonize": "no", "loglevel": "warning"}
        self.process = subprocess.Popen(
            [binary, *(part for key, value in options.items() for part in (f"--{key}", value))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with self.client() as client:
            wait_until(lambda: self._answers(client), f"redis-server on {self.port} did not start")

    def _answers(self, client: redis.Redis) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"redis-server exited ({self.process.returncode})")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True, socket_timeout=10)


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """Start a private server; yields it, and removes everything afterwards."""
    home = Path(tempfile.mkdtemp(prefix="loopengine-redis-"))
    server = RedisServer(home, _free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
