"""Session settings on PostgreSQL: those a user gives, as libpq reads them (the URL's
``options``, else ``$PGOPTIONS``), reach the server with loopengine's own, which hold."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from loopengine.store._database import IDLE_IN_TRANSACTION_MS, create_engine
from loopengine.store.wakeups import connector
from tests.postgres import PostgresServer

_IDLE = f"{IDLE_IN_TRANSACTION_MS // 1000}s"
_SHOWN = ("search_path", "lock_timeout", "idle_in_transaction_session_timeout")


@pytest.fixture(scope="module")
def url(shared_postgres: PostgresServer) -> Iterator[str]:
    with shared_postgres.database() as made:
        yield made


def _settings(url: str, read_only: bool = False) -> dict[str, str]:
    engine = create_engine(url, read_only=read_only)
    try:
        with engine.connect() as connection:
            names = (*_SHOWN, "default_transaction_read_only")
            return {name: connection.exec_driver_sql(f"SHOW {name}").scalar_one() for name in names}
    finally:
        engine.dispose()


def _with_options(url: str, *options: str) -> str:
    return url + "?" + "&".join(f"options={quote(option)}" for option in options)


def test_the_urls_options_reach_the_session_with_loopengines(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=9000")
    shown = _settings(_with_options(url, "-c search_path=loops,public"))
    assert shown["search_path"] == "loops,public"
    assert shown["lock_timeout"] == "0"  # libpq's rule: the URL's options, not $PGOPTIONS
    assert shown["idle_in_transaction_session_timeout"] == _IDLE


def test_each_options_parameter_of_the_url_is_kept(url: str) -> None:
    shown = _settings(_with_options(url, "-c search_path=loops", "-c lock_timeout=7"))
    assert (shown["search_path"], shown["lock_timeout"]) == ("loops", "7ms")


def test_pgoptions_reaches_the_session_when_the_url_has_none(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=9000")
    shown = _settings(url)
    assert (shown["lock_timeout"], shown["idle_in_transaction_session_timeout"]) == ("9s", _IDLE)


def test_loopengines_settings_hold_against_the_users(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paused daemon's jobs are taken over because its session ends (``architecture.md``),
    and a read-only store must not write: neither is the user's to turn off."""
    monkeypatch.delenv("PGOPTIONS", raising=False)
    given = "-c idle_in_transaction_session_timeout=0 -c default_transaction_read_only=off"
    shown = _settings(_with_options(url, given), read_only=True)
    assert shown["idle_in_transaction_session_timeout"] == _IDLE
    assert shown["default_transaction_read_only"] == "on"


@pytest.mark.anyio
async def test_the_connection_listening_for_wakeups_has_the_same_settings(url: str) -> None:
    engine = create_engine(_with_options(url, "-c search_path=loops", "-c lock_timeout=7"))
    try:
        connect = connector(engine)
        assert connect is not None
        listening = await connect()
        async with listening:
            shown = [
                (await (await listening.execute(f"SHOW {name}")).fetchone() or ("",))[0]
                for name in _SHOWN
            ]
    finally:
        engine.dispose()
    assert shown == ["loops", "7ms", _IDLE]
