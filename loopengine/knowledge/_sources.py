"""A collection's files: found from its sources (folders and globs relative to the config's
folder), bounded in count and size, never through a link to a folder nor out of that folder,
and read into blocks by format (Markdown, text, HTML, PDF)."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from loopengine.knowledge._formats import (
    Block,
    Unreadable,
    html_blocks,
    markdown_blocks,
    pdf_blocks,
    text_blocks,
)

__all__ = [
    "FORMATS",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_SKIPPED",
    "Found",
    "LeftOut",
    "Skipped",
    "SourceFile",
    "find_files",
    "read_blocks",
]

MAX_FILE_BYTES = 32 * 2**20
"""Largest file indexed; a larger one is skipped."""
MAX_FILES = 100_000
"""Most files of one collection; the rest are skipped."""
MAX_SKIPPED = 100
"""Files and sources left out that are named one by one; the others are only counted."""
_SNIFFED = 8192
"""Bytes looked at for a NUL: a file with one there is binary."""


def _decoded(data: bytes) -> str:
    if b"\0" in data[:_SNIFFED]:
        raise Unreadable("binary, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte {exc.start})") from None


FORMATS: dict[str, Callable[[bytes], list[Block]]] = {
    ".md": lambda data: markdown_blocks(_decoded(data)),
    ".markdown": lambda data: markdown_blocks(_decoded(data)),
    ".txt": lambda data: text_blocks(_decoded(data)),
    ".text": lambda data: text_blocks(_decoded(data)),
    ".html": lambda data: html_blocks(_decoded(data)),
    ".htm": lambda data: html_blocks(_decoded(data)),
    ".pdf": pdf_blocks,
}
"""How a file is read into blocks, by suffix."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file found: where it is, and its name in the collection (its path from the config's
    folder, with ``/``)."""

    path: Path
    name: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file (or a source) left out, and why."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(slots=True)
class LeftOut:
    """Files and sources left out, and why: the first ``MAX_SKIPPED`` listed, the others
    counted in ``more``; its length counts them all."""

    listed: list[Skipped] = field(default_factory=list)
    more: int = 0

    def add(self, skipped: Skipped) -> None:
        """Lists ``skipped``, or counts it once ``MAX_SKIPPED`` are listed."""
        if len(self.listed) < MAX_SKIPPED:
            self.listed.append(skipped)
        else:
            self.more += 1

    def __iter__(self) -> Iterator[Skipped]:
        return iter(self.listed)

    def __len__(self) -> int:
        return len(self.listed) + self.more


@dataclass(frozen=True, slots=True)
class Found:
    """A collection's files, by name, and what was left out."""

    files: tuple[SourceFile, ...]
    skipped: LeftOut


def _tree(folder: Path) -> Iterator[tuple[Path, list[str]]]:
    """Each folder under ``folder`` (itself first) with the names in it that are not folders,
    sorted; hidden folders (``.git``…) and links to folders are not entered."""
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        yield Path(root), sorted(files)


def _walk(folder: Path) -> Iterator[Path]:
    """The files of a known format under ``folder``, hidden ones left out."""
    for root, names in _tree(folder):
        for name in names:
            if not name.startswith(".") and Path(name).suffix.lower() in FORMATS:
                yield root / name


def _glob(folder: Path, parts: Sequence[str]) -> Iterator[Path]:
    """The paths under ``folder`` that the glob ``parts`` match (``**``: any number of
    folders); a link to a folder the glob would enter is matched itself, never entered."""
    if not parts:
        yield folder
    elif parts[0] == "**":
        for root, _ in _tree(folder):
            yield from _glob(root, parts[1:])
    else:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in fnmatch.filter(names, parts[0]):
            path = folder / name
            if len(parts) == 1 or (path.is_symlink() and path.is_dir()):
                yield path
            elif path.is_dir():
                yield from _glob(path, parts[1:])


def _named(base: Path, source: str) -> list[Path]:
    """What ``source`` names under ``base``: the path itself, or what the glob matches in order
    (hidden files and folders only when the glob names them; only folders when it ends in
    ``/``)."""
    if not any(char in source for char in "*?["):
        return [base / source] if (base / source).exists() else []
    parts = PurePosixPath(source).parts
    return [
        path
        for path in sorted(set(_glob(base, parts)))
        if not any(p.startswith(".") and p not in parts for p in path.relative_to(base).parts)
        and (path.is_dir() or not source.endswith("/"))
    ]


def _within(path: Path, root: Path) -> bool:
    """Whether ``path``, its links followed, is in the folder ``root`` (a link that loops is
    where it is)."""
    return Path(os.path.realpath(path)).is_relative_to(root)


def _matches(base: Path, source: str) -> Iterator[tuple[Path, bool]]:
    """What ``source`` names under ``base``: each file, and whether it was named as a file (a
    format it cannot be is then reported, not passed over). A folder is walked, unless it is a
    link or resolves out of ``base``: it is then named as a file would be."""
    root = base.resolve()
    for path in _named(base, source):
        if path.is_dir() and not path.is_symlink() and _within(path, root):
            yield from ((inner, False) for inner in _walk(path))
        else:
            yield path, True


def _outside(source: str) -> bool:
    """Whether ``source`` names a path out of the config's folder whatever the links."""
    path = PurePosixPath(source)
    return path.is_absolute() or ".." in path.parts


def find_files(base: Path, sources: Sequence[str]) -> Found:
    """The files ``sources`` name under the folder ``base``, each once, in order; a file or
    folder that resolves out of ``base`` (through a link), a link to a folder, a file named of
    no known format, and a source out of ``base`` or that names nothing are reported instead."""
    root = base.resolve()
    files: dict[str, SourceFile] = {}
    skipped = LeftOut()
    for source in sources:
        if _outside(source):
            skipped.add(Skipped(source, "not in the config's folder: name a path inside it"))
            continue
        before = len(files) + len(skipped)
        for path, named in _matches(base, source):
            name = path.relative_to(base).as_posix()
            if name in files:
                continue
            if not _within(path, root):
                skipped.add(Skipped(name, "a link out of the config's folder, not followed"))
            elif path.is_dir():
                skipped.add(Skipped(name, "a link to a folder, not followed: name its target"))
            elif named and path.suffix.lower() not in FORMATS:
                skipped.add(Skipped(name, "not Markdown, text, HTML or PDF"))
            elif len(files) == MAX_FILES:
                skipped.add(Skipped(source, f"more than {MAX_FILES:,} files: the rest left out"))
                return Found(tuple(files.values()), skipped)
            else:
                files[name] = SourceFile(path, name)
        if len(files) + len(skipped) == before:
            skipped.add(Skipped(source, "names no file"))
    return Found(tuple(files.values()), skipped)


def read_blocks(file: SourceFile, salt: bytes) -> tuple[str, Callable[[], list[Block]]]:
    """The digest of ``file``'s bytes (with ``salt``: how it is cut), and how to read its
    blocks; ``Unreadable`` when it is too large or cannot be read."""
    try:
        size = file.path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Unreadable(
                f"{size:,} bytes, over the {MAX_FILE_BYTES // 2**20} MiB a file may be"
            )
        with file.path.open("rb") as opened:
            data = opened.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(f"over the {MAX_FILE_BYTES // 2**20} MiB a file may be")
    digest = hashlib.sha256(salt + data).hexdigest()
    reader = FORMATS[file.path.suffix.lower()]
    return digest, lambda: reader(data)
