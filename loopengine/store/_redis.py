"""Redis, reached through redis-py (the ``redis`` extra), imported only when a Redis storage or
event source is used; its errors become ``StorageError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopengine._secrets import MASK
from loopengine.errors import StorageError

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["IO_TIMEOUT_S", "async_redis_client", "redis_client", "redis_failure", "shown_url"]

IO_TIMEOUT_S = 10.0
"""Deadline of one Redis command and of connecting: an unreachable server fails, never hangs."""


_CREDENTIALS = frozenset({"user", "username", "password", "passwd"})
"""Query parameters that carry credentials (redis-py reads ``?password=``)."""


def shown_url(url: str) -> str:
    """``url`` without its user and password, as messages and artifact locations show it: all
    before the last ``@`` goes (a password may hold an unescaped ``#``, ``?`` or ``/``), and a
    credential in the query is masked."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    base, mark, query = rest[rest.rfind("@") + 1 :].partition("?")
    if not mark:
        return f"{scheme}://{base}"
    fields = [field.partition("=") for field in query.split("&")]
    shown = [f"{k}={MASK}" if k.lower() in _CREDENTIALS else k + eq + v for k, eq, v in fields]
    return f"{scheme}://{base}?{'&'.join(shown)}"


def redis_client(url: str) -> redis.Redis:
    """A client of the Redis server at ``url`` (``redis://`` or ``rediss://``), connecting on
    first use. ``StorageError`` when redis-py is not installed or the URL is not Redis's."""
    module = _redis_py(url)
    try:
        return module.Redis.from_url(  # type: ignore[no-any-return]
            url,
            decode_responses=True,
            socket_timeout=IO_TIMEOUT_S,
            socket_connect_timeout=IO_TIMEOUT_S,
        )
    except ValueError as exc:
        raise _invalid(url, exc) from None


def async_redis_client(url: str, block_s: float) -> redis.asyncio.Redis:
    """``redis_client`` for asyncio, answering bytes, whose reads may block ``block_s`` more."""
    _redis_py(url)
    import redis.asyncio

    try:
        return redis.asyncio.Redis.from_url(
            url, socket_timeout=IO_TIMEOUT_S + block_s, socket_connect_timeout=IO_TIMEOUT_S
        )
    except ValueError as exc:
        raise _invalid(url, exc) from None


def _redis_py(url: str) -> Any:
    try:
        import redis
    except ImportError:
        raise StorageError(
            f"{shown_url(url)} needs the Redis client: pip install 'loopengine[redis]'"
        ) from None
    return redis


def _invalid(url: str, exc: ValueError) -> StorageError:
    return StorageError(f"invalid Redis URL {shown_url(url)}: {exc}")


def redis_failure(url: str, exc: Exception) -> StorageError:
    """What a failed Redis command says: the server (without its password) and why."""
    said = str(exc).rstrip(".") or type(exc).__name__
    return StorageError(f"Redis at {shown_url(url)}: {said}")
