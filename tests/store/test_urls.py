"""A database URL as a process opens it: relative SQLite paths start at the config's folder, and
what a message shows of a store never holds its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopengine.errors import StorageError
from loopengine.store.urls import StoreUrl, store_url


def test_a_relative_sqlite_path_starts_at_the_base(tmp_path: Path) -> None:
    found = store_url("sqlite:///state/store.db?synchronous=normal", tmp_path)
    file = tmp_path / "state" / "store.db"
    assert found == StoreUrl(f"sqlite:///{file}?synchronous=normal", file, str(file))


def test_an_absolute_sqlite_path_is_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert store_url(url, Path("/elsewhere")) == StoreUrl(
        url, tmp_path / "store.db", str(tmp_path / "store.db")
    )


def test_a_sqlite_path_in_the_home_folder_is_expanded(tmp_path: Path) -> None:
    found = store_url("sqlite:///~/store.db", tmp_path)
    assert found.url == "sqlite:///~/store.db"
    assert found.file == Path.home() / "store.db"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_a_sqlite_store_in_memory_has_no_file(url: str, tmp_path: Path) -> None:
    found = store_url(url, tmp_path)
    assert (found.url, found.file) == (url, None)


def test_a_server_store_is_shown_without_its_password(tmp_path: Path) -> None:
    url = "postgresql://loop:s3cret@127.0.0.1:5432/loops"
    found = store_url(url, tmp_path)
    assert found == StoreUrl(url, None, "postgresql://loop:***@127.0.0.1:5432/loops")


def test_a_url_that_does_not_parse_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="invalid database URL 'not a url'"):
        store_url("not a url", tmp_path)
