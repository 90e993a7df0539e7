"""The daemon's loops: every valid file of its folder, reloaded when a file changes, and the
shipped loops it is given as fallbacks (the autolearn loops) unless a file defines their id.

Files load as a daemon serves them (``LoopLoader.serving``: a webhook whose secret is not set is
refused). An invalid file is logged with every error and skipped; an invalid edit keeps the
version that runs, and so does a version the daemon then fails to schedule (``refuse``); a
deleted file unschedules its loop (or gives its id back to the shipped loop). Files are compared
by modification time and size, so a scan of an unchanged folder reads no file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loopengine.app import triggers_of
from loopengine.contract import Loop, LoopLoader, find_loop_files
from loopengine.daemon._log import DaemonLog
from loopengine.errors import LoopEngineError

__all__ = ["Changes", "LoopFolder", "reason", "triggers_of"]


@dataclass(frozen=True, slots=True)
class Changes:
    """What a scan changed: loops added or replaced by a new version (``previous`` holds the
    versions replaced, by loop id), loop ids removed."""

    loaded: tuple[Loop, ...] = ()
    removed: tuple[str, ...] = ()
    previous: Mapping[str, Loop] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.loaded or self.removed)


@dataclass(slots=True)
class LoopFolder:
    folder: Path
    loader: LoopLoader
    log: DaemonLog
    loops: dict[str, Loop] = field(default_factory=dict)
    _stamps: dict[Path, tuple[int, int]] = field(default_factory=dict)
    _ids: dict[Path, str] = field(default_factory=dict)
    _clashes: set[Path] = field(default_factory=set)
    """Files refused because another file defines their loop id: tried again once one goes."""
    fallbacks: tuple[Path, ...] = ()
    """Shipped loop files scheduled unless a file of the folder defines their loop id."""
    _shipped: dict[Path, Loop | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.loader = self.loader.serving()

    def scan(self) -> Changes:
        """Load what changed since the last scan; the first scan loads every file."""
        stamps = {path: _stamp(path) for path in find_loop_files([self.folder])}
        removed = [self._forget(path) for path in sorted(set(self._ids) - set(stamps))]
        retry = self._clashes & set(stamps) if removed else set()
        running = dict(self.loops)
        loaded: list[Loop] = []
        for path in sorted(stamps):
            changed = stamps[path] != self._stamps.get(path) or path in retry
            if changed and (loop := self._load(path)) is not None:
                loaded.append(loop)
        self._stamps = {path: stamp for path, stamp in stamps.items() if stamp is not None}
        loaded.extend(self._fallen_back({path.resolve() for path in stamps}))
        kept = {loop.id for loop in loaded}
        previous = {loop.id: running[loop.id] for loop in loaded if loop.id in running}
        return Changes(tuple(loaded), tuple(i for i in removed if i and i not in kept), previous)

    def refuse(self, loop: Loop, previous: Loop | None) -> None:
        """Take back ``loop``, loaded by the last scan but not schedulable: ``previous`` (the
        version it replaced) runs again, or nothing under its id; its file is tried again once
        it changes."""
        path = Path(loop.file)
        if self._ids.get(path) == loop.id and (previous is None or previous.file != loop.file):
            del self._ids[path]
        if path in self._shipped:
            self._shipped[path] = None
        if previous is None:
            self.loops.pop(loop.id, None)
        else:
            self.loops[loop.id] = previous

    def _load(self, path: Path) -> Loop | None:
        try:
            report = self.loader.load_file(path, self.folder)
        except Exception as exc:  # a fault loading one file refuses that file alone
            self.log.line("error", f"cannot load: {reason(exc)}", file=str(path))
            return None
        if report.loop is None or not report.ok:
            kept = " (the previous version keeps running)" if path in self._ids else ""
            for problem in report.errors:
                self.log.line("error", problem.format(), file=str(path))
            self.log.line("skip", f"invalid loop file, not scheduled{kept}", file=str(path))
            return None
        loop = report.loop
        owner = next((p for p, loop_id in self._ids.items() if loop_id == loop.id), None)
        if owner is not None and owner != path:
            self._clashes.add(path)
            self.log.line(
                "error",
                f"loop id '{loop.id}' is already defined in {owner}: rename one of them",
                file=str(path),
            )
            return None
        self._clashes.discard(path)
        old_id = self._ids.get(path)
        if old_id is not None and old_id != loop.id:
            self.loops.pop(old_id, None)
        self._ids[path] = loop.id
        self.loops[loop.id] = loop
        return loop

    def _fallen_back(self, files: set[Path]) -> list[Loop]:
        """The shipped loops newly scheduled: those whose id no loop of the folder has (each
        file loaded once; one that is a file of the folder is that file)."""
        added = []
        for path in self.fallbacks:
            if path not in self._shipped:
                inside = path.resolve() in files
                self._shipped[path] = None if inside else self._load_shipped(path)
            loop = self._shipped[path]
            if loop is not None and loop.id not in self.loops:
                self.loops[loop.id] = loop
                added.append(loop)
        return added

    def _load_shipped(self, path: Path) -> Loop | None:
        report = self.loader.load_file(path)
        for problem in report.errors:
            self.log.line("error", problem.format(), file=str(path))
        return report.loop if report.ok else None

    def _forget(self, path: Path) -> str | None:
        loop_id = self._ids.pop(path, None)
        if loop_id is not None:
            self.loops.pop(loop_id, None)
        return loop_id


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def reason(exc: Exception) -> str:
    """What a log line says of an error: loopengine's own message, or an unexpected error's type
    and message."""
    return str(exc) if isinstance(exc, LoopEngineError) else f"{type(exc).__name__}: {exc}"
