"""The file system the file tools see: the tools root, minus what stays private to the process
(its config, its store, hidden files), which is never read, listed nor searched."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["Sandbox"]

_Identity = tuple[int, int]


class Sandbox:
    """Nothing outside ``root``; nothing hidden (a part of the path below ``base`` or the root
    starting with ``.``: ``.loopengine/``, ``.env``, ``.git/``); nothing at or under a
    ``private`` path however it is named (a link, ``..``, another case on a file system that
    ignores case, a hard link), since paths are compared by device and inode, looked up at each
    call (a store's ``-wal`` may come later); no link followed out of the root, no special file
    (a FIFO would block), and never more than the limit asked of a file."""

    def __init__(self, root: Path, private: Iterable[Path] = (), base: Path | None = None) -> None:
        self.root = root.resolve()
        self.private = tuple(Path(os.path.abspath(path)) for path in private)
        home = base.resolve() if base is not None else self.root
        self._hidden_below = home if self._inside(self.root, home) else self.root

    def path(self, relative: str) -> Path:
        """The real path of ``relative`` (to the root), or ``PermissionError`` saying why not."""
        candidate = (self.root / relative).resolve()
        self._check(candidate, relative, self._closed())
        return candidate

    def read(self, relative: str | Path, limit: int) -> tuple[bytes, bool]:
        """At most ``limit`` bytes of a regular file, and whether there was more. The file is
        opened without following a final link, then checked again through its descriptor, so a
        folder swapped for a link meanwhile leads neither out of the root nor to a private file."""
        target = self.path(str(relative))
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            descriptor = os.open(target, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PermissionError(f"{relative!r} is a link: links are not followed") from None
            raise
        with os.fdopen(descriptor, "rb") as stream:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode):
                raise PermissionError(f"{relative!r} is not a regular file")
            closed = self._closed()
            opened = Path(f"/proc/self/fd/{descriptor}")
            if opened.exists():
                self._check(Path(os.readlink(opened)), str(relative), closed)
            if _identity(info) in closed:
                raise _private(str(relative))
            data = stream.read(limit + 1)
        return data[:limit], len(data) > limit

    def entries(self, folder: Path) -> list[os.DirEntry[str]]:
        """The entries of ``folder`` open to tools, by name (a link only when what it leads to
        is)."""
        closed = self._closed()
        with os.scandir(folder) as found:
            shown = [entry for entry in found if self._shown(entry, closed)]
        return sorted(shown, key=lambda entry: entry.name)

    def files(self, folder: Path, in_time: Callable[[], None]) -> list[Path]:
        """The regular files under ``folder`` open to tools, by path; links are not followed,
        and ``in_time`` is called at each folder (it raises to stop a walk past its deadline)."""
        closed = self._closed()
        found = []
        for current, folders, names in os.walk(folder, followlinks=False):
            in_time()
            folders[:] = [name for name in folders if _open(Path(current, name), closed)]
            for name in names:
                path = Path(current, name)
                if _open(path, closed) and stat.S_ISREG(path.lstat().st_mode):
                    found.append(path)
        return sorted(found)

    def _shown(self, entry: os.DirEntry[str], closed: frozenset[_Identity]) -> bool:
        path = Path(entry.path)
        if not _open(path, closed):
            return False
        if not entry.is_symlink():
            return True
        target = path.resolve()
        return self._inside(target, self.root) and self._allowed(target, closed)

    def _check(self, candidate: Path, relative: str, closed: frozenset[_Identity]) -> None:
        if not self._inside(candidate, self.root):
            raise PermissionError(f"{relative!r} is outside the tools root")
        if not self._allowed(candidate, closed):
            raise _private(relative)

    @staticmethod
    def _inside(candidate: Path, folder: Path) -> bool:
        return candidate == folder or folder in candidate.parents

    def _allowed(self, candidate: Path, closed: frozenset[_Identity]) -> bool:
        """Whether ``candidate`` (a real path inside the root) is not hidden, and neither it nor
        a folder holding it (the root's too) is private."""
        parts = candidate.relative_to(self._hidden_below).parts
        if any(part.startswith(".") for part in parts):
            return False
        return not any(_closed(path, closed) for path in (candidate, *candidate.parents))

    def _closed(self) -> frozenset[_Identity]:
        """The device and inode of each private path that exists now."""
        found = set()
        for path in self.private:
            try:
                found.add(_identity(path.stat()))
            except OSError:
                continue
        return frozenset(found)


def _identity(info: os.stat_result) -> _Identity:
    return info.st_dev, info.st_ino


def _closed(path: Path, closed: frozenset[_Identity], follow: bool = True) -> bool:
    """Whether ``path`` is one of the ``closed`` files or folders (itself, when not ``follow``:
    a link is not what it leads to)."""
    try:
        info = path.stat() if follow else path.lstat()
    except OSError:
        return False
    return _identity(info) in closed


def _open(path: Path, closed: frozenset[_Identity]) -> bool:
    """Whether an entry of a folder open to tools is shown: not hidden, not private."""
    return not path.name.startswith(".") and not _closed(path, closed, follow=False)


def _private(relative: str) -> PermissionError:
    return PermissionError(
        f"{relative!r} is not open to tools: hidden files, the config and the store never are"
    )
