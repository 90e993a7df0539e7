"""Entries under a root folder, reached through folder descriptors: each step opens the next
folder from the last one's descriptor without following a link, and the last name is acted on
from its folder's descriptor, so neither a link on the way nor one swapped in while an action
runs leads outside the root."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from functools import cache
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

__all__ = ["MAX_PATH", "Place", "Root", "identity", "parts_of", "rename_new"]

MAX_PATH = 4096
"""Most characters of a path an action names."""

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1

Identity = tuple[int, int]


def identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino


def parts_of(given: str, root: Path) -> tuple[str, ...]:
    """The names leading from ``root`` (a real path) to ``given``, a path relative to it or
    absolute inside it; ``PermissionError`` or ``ValueError`` saying why it names nothing there."""
    if not given or "\0" in given:
        raise ValueError(f"{given!r} is no path")
    path = PurePosixPath(given)
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            raise PermissionError(f"{given!r} is outside actions.root ({root})") from None
    if ".." in path.parts:
        raise PermissionError(f"{given!r} has '..': name the path from actions.root without it")
    if not path.parts:
        raise ValueError(f"{given!r} names actions.root itself, not an entry under it")
    return path.parts


class Place:
    """An entry: the descriptor of its folder, its name there, its path from the root, and the
    folders made to reach it (from the root, outermost first)."""

    __slots__ = ("folder", "made", "name", "shown")

    def __init__(self, folder: int, name: str, shown: str, made: tuple[str, ...] = ()) -> None:
        self.folder, self.name, self.shown, self.made = folder, name, shown, made

    def lstat(self) -> os.stat_result | None:
        """The entry itself (a link is not followed); None when there is none."""
        try:
            return os.lstat(self.name, dir_fd=self.folder)
        except FileNotFoundError:
            return None


class Root:
    """A root folder open by descriptor while the block lasts, minus ``closed`` paths: nothing at
    or under them is reached, nor a folder holding one moved (they are compared by device and
    inode, so no other name for them helps)."""

    def __init__(self, path: Path, closed: Iterable[Path]) -> None:
        self.path = path.resolve()
        self._closed, self._holding = _identities(closed)
        self._open: list[int] = []

    def __enter__(self) -> Root:
        try:
            self._open.append(os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        except OSError as exc:
            raise FileNotFoundError(
                f"actions.root {self.path} is no folder: {exc.strerror}"
            ) from None
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for descriptor in self._open:
            os.close(descriptor)

    def shown(self, given: str) -> str:
        """``given`` as a path from the root."""
        return "/".join(parts_of(given, self.path))

    def lookup(self, given: str) -> Place | None:
        """Where ``given`` is; None when a folder on the way is missing."""
        return self._walk(given, create=False)

    def reach(self, given: str) -> Place:
        """Where ``given`` is, the folders missing on the way made."""
        place = self._walk(given, create=True)
        assert place is not None
        return place

    def _walk(self, given: str, create: bool) -> Place | None:
        parts = parts_of(given, self.path)
        *folders, name = parts
        current, made = self._open[0], []
        for depth, part in enumerate(folders):
            shown = "/".join(folders[: depth + 1])
            try:
                current = self._folder(current, part, shown)
            except FileNotFoundError:
                if not create:
                    return None
                os.mkdir(part, dir_fd=current)
                made.append(shown)
                current = self._folder(current, part, shown)
        return Place(current, name, "/".join(parts), tuple(made))

    def existing(self, given: str) -> tuple[Place, os.stat_result]:
        """``given``, which must exist and be open to actions (a folder holding nothing closed)."""
        place = self.lookup(given)
        info = None if place is None else place.lstat()
        if place is None or info is None:
            raise FileNotFoundError(f"{given!r} does not exist")
        self.check(given, info)
        return place, info

    def check(self, given: str, info: os.stat_result) -> None:
        """``PermissionError`` when the entry ``info`` describes is closed or holds what is."""
        found = identity(info)
        if found in self._closed or (stat.S_ISDIR(info.st_mode) and found in self._holding):
            raise _closed(given)

    def _folder(self, parent: int, part: str, shown: str) -> int:
        try:
            descriptor = os.open(part, _FOLDER, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if stat.S_ISLNK(os.lstat(part, dir_fd=parent).st_mode):
                raise PermissionError(f"{shown!r} is a link: links are not followed") from None
            raise NotADirectoryError(f"{shown!r} is not a folder") from None
        self._open.append(descriptor)
        if identity(os.fstat(descriptor)) in self._closed:
            raise _closed(shown)
        return descriptor


def _identities(paths: Iterable[Path]) -> tuple[frozenset[Identity], frozenset[Identity]]:
    """The device and inode of each of ``paths`` that exists, and of every folder holding one."""
    closed: set[Identity] = set()
    holding: set[Identity] = set()
    for path in paths:
        absolute = Path(os.path.abspath(path))
        for index, each in enumerate((absolute, *absolute.parents)):
            try:
                found = identity(each.stat())
            except OSError:
                continue
            (holding if index else closed).add(found)
    return frozenset(closed), frozenset(holding)


def _closed(shown: str) -> PermissionError:
    return PermissionError(f"{shown!r} is not open to actions: the config and the store never are")


def rename_new(source: Place, target: Place) -> None:
    """Rename ``source`` to ``target``, which must not exist, even if it appears meanwhile
    (``renameat2`` with ``RENAME_NOREPLACE`` where the C library has it): ``FileExistsError``."""
    renameat2 = _renameat2()
    if renameat2 is not None:
        names = os.fsencode(source.name), os.fsencode(target.name)
        if renameat2(source.folder, names[0], target.folder, names[1], _RENAME_NOREPLACE) == 0:
            return
        code = _errno()
        if code == errno.EEXIST:
            raise _exists(target)
        if code not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(code, os.strerror(code), target.shown)
    if target.lstat() is not None:
        raise _exists(target)
    os.rename(source.name, target.name, src_dir_fd=source.folder, dst_dir_fd=target.folder)


def _exists(target: Place) -> FileExistsError:
    return FileExistsError(f"{target.shown!r} exists already: name a new one")


@cache
def _renameat2() -> Any:
    import ctypes  # only for a rename: the built-ins load with every command

    return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()
