"""A collection's files: found from its sources (folders and globs relative to the config's
folder), bounded in count and size, never through a link out of that folder, and read into
blocks by format (Markdown, text, HTML, PDF)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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
    "Found",
    "Skipped",
    "SourceFile",
    "find_files",
    "read_blocks",
]

MAX_FILE_BYTES = 32 * 2**20
"""Largest file indexed; a larger one is skipped."""
MAX_FILES = 100_000
"""Most files of one collection; the rest are skipped."""
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


@dataclass(frozen=True, slots=True)
class Found:
    """A collection's files, by name, and what was left out."""

    files: tuple[SourceFile, ...]
    skipped: tuple[Skipped, ...]


def _walk(folder: Path) -> Iterator[Path]:
    """The files of a known format under ``folder``, hidden ones (``.git``…) left out; links
    to folders are not entered."""
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and Path(name).suffix.lower() in FORMATS:
                yield Path(root, name)


def _matches(base: Path, source: str) -> Iterator[tuple[Path, bool]]:
    """What ``source`` names under ``base``: each file, and whether it was named as a file (a
    format it cannot be is then reported, not passed over)."""
    if not any(char in source for char in "*?["):
        target = base / source
        if target.is_dir():
            yield from ((path, False) for path in _walk(target))
        elif target.exists():
            yield target, True
        return
    named = set(PurePosixPath(source).parts)
    for path in sorted(base.glob(source)):
        hidden = any(p.startswith(".") and p not in named for p in path.relative_to(base).parts)
        if hidden:
            continue
        if path.is_dir():
            yield from ((inner, False) for inner in _walk(path))
        else:
            yield path, True


def find_files(base: Path, sources: Sequence[str]) -> Found:
    """The files ``sources`` name under the folder ``base``, each once, in order; a file that
    resolves out of ``base`` (through a link) or of no known format, and a source that names
    nothing, are reported instead."""
    root = base.resolve()
    files: dict[str, SourceFile] = {}
    skipped: list[Skipped] = []
    for source in sources:
        before = len(files) + len(skipped)
        for path, named in _matches(base, source):
            name = path.relative_to(base).as_posix()
            if name in files:
                continue
            if not path.resolve().is_relative_to(root):
                skipped.append(Skipped(name, "a link out of the config's folder, not followed"))
            elif named and path.suffix.lower() not in FORMATS:
                skipped.append(Skipped(name, "not Markdown, text, HTML or PDF"))
            elif len(files) == MAX_FILES:
                skipped.append(Skipped(source, f"more than {MAX_FILES:,} files: the rest left out"))
                return Found(tuple(files.values()), tuple(skipped))
            else:
                files[name] = SourceFile(path, name)
        if len(files) + len(skipped) == before:
            skipped.append(Skipped(source, "names no file"))
    return Found(tuple(files.values()), tuple(skipped))


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
