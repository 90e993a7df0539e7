"""The daemon's loops: every valid file of its folder, reloaded when a file changes, and the
shipped loops it is given as fallbacks (the autolearn loops) unless a file defines their id.

Files load as a daemon serves them (``LoopLoader.serving``: a webhook whose secret is not set is
refused). An invalid file is logged with every error and skipped; an invalid edit keeps the
version that runs, and so does a version the daemon then fails to schedule (``refuse``); a
deleted file unschedules its loop (or gives its id back to the shipped loop). Files are compared
by modification time and size, so a scan of an unchanged folder reads no file.

A served loop is kept as a compact record (what the daemon decides on without running it, and its
source compressed); its definition is built again from that source when a job runs, and the last
``MAX_BUILT`` used are kept built.
"""

from __future__ import annotations

import os
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loopengine.app import triggers_of
from loopengine.contract import LoadReport, Loop, LoopLoader, find_loop_files
from loopengine.daemon._log import DaemonLog
from loopengine.errors import ContractError, LoopEngineError

__all__ = [
    "MAX_BUILT",
    "Changes",
    "LoopFolder",
    "LoopRecord",
    "ServedLoops",
    "reason",
    "triggers_of",
]

MAX_BUILT = 64
"""Most loop definitions a daemon keeps built; the others are built again when a job runs."""

_VOCABULARY = (
    b"description: domain: version: metric: event_pattern: filter: scope: threshold webhook manual "
    b"timezone: jitter_s: catchup_window: max_catchup: latest skip all concurrency: max: "
    b"on_overlap: max_queue: detect: analyze: act: actions: validate: learn: store: "
    b"retention_days: skill: params: when: condition: action: decision_tree: fallback_action: "
    b"log_only decide: expression: config: type: cron trigger: triggers: name: id: "
)
"""Words most loop files share: a loop's source is compressed with them as a preset dictionary
(a small file to about half of what it compresses to without)."""

_TRIGGERS: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
"""Each loop's trigger list, shared by the loops that have the same one."""


@dataclass(frozen=True, slots=True)
class LoopRecord:
    """What a daemon keeps of a loop it serves: what it decides on without running the loop
    (its triggers' ids and types, its concurrency and retention), and its source, compressed."""

    id: str
    file: str
    triggers: tuple[tuple[str, str], ...]
    max_running: int
    retention_days: float | None
    source: bytes

    @classmethod
    def of(cls, loop: Loop, text: str, file: str) -> LoopRecord:
        found = tuple((trigger_id, trigger.type) for trigger_id, trigger in triggers_of(loop))
        spec = loop.spec
        return cls(
            loop.id,
            file,
            _TRIGGERS.setdefault(found, found),
            spec.concurrency.max,
            spec.store.retention_days if spec.store else None,
            _compressed(text),
        )


def _compressed(text: str) -> bytes:
    packer = zlib.compressobj(9, zdict=_VOCABULARY)
    return packer.compress(text.encode()) + packer.flush()


class ServedLoops(Mapping[str, Loop]):
    """The loops a daemon serves, by id: a record of each, and the ``MAX_BUILT`` definitions
    used last, the others built again from their record's source when asked for."""

    def __init__(self, loader: LoopLoader, built: int = MAX_BUILT) -> None:
        self.loader = loader
        self.records: dict[str, LoopRecord] = {}
        self._built: OrderedDict[str, Loop] = OrderedDict()
        self._most = built

    def __getitem__(self, loop_id: str) -> Loop:
        loop = self._built.get(loop_id)
        if loop is None:
            loop = self.build(self.records[loop_id])
            self._keep(loop)
        else:
            self._built.move_to_end(loop_id)
        return loop

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def build(self, record: LoopRecord) -> Loop:
        """The definition of ``record``'s loop, built again from its source."""
        source = zlib.decompressobj(zdict=_VOCABULARY).decompress(record.source).decode()
        report = self.loader.load_text(source, record.file)
        if report.loop is None:
            raise ContractError(
                f"{record.file}: the loop no longer builds from the source it was loaded from",
                report.diagnostics,
            )
        return report.loop

    def put(self, loop: Loop, text: str, file: str | None = None) -> None:
        """Serve ``loop`` (built from ``text``), in place of any loop of its id; its record
        names ``file`` (the string its folder keeps for the same file), else ``loop.file``."""
        self.records[loop.id] = LoopRecord.of(loop, text, loop.file if file is None else file)
        self._built.pop(loop.id, None)
        self._keep(loop)

    def restore(self, record: LoopRecord) -> None:
        """Serve ``record``'s loop again, in place of any loop of its id."""
        self.records[record.id] = record
        self._built.pop(record.id, None)

    def __contains__(self, loop_id: object) -> bool:
        return loop_id in self.records

    def remove(self, loop_id: str) -> None:
        """Stop serving ``loop_id`` (nothing when it is not served)."""
        self.records.pop(loop_id, None)
        self._built.pop(loop_id, None)

    def limits(self) -> dict[str, int]:
        """Each served loop's ``concurrency.max``, by id."""
        return {loop_id: record.max_running for loop_id, record in self.records.items()}

    def _keep(self, loop: Loop) -> None:
        self._built[loop.id] = loop
        if len(self._built) > self._most:
            self._built.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Changes:
    """What a scan changed: loops added or replaced by a new version (``previous`` holds the
    versions replaced, by loop id), loop ids removed; ``more`` when changed files are left for
    the next scan."""

    loaded: tuple[Loop, ...] = ()
    removed: tuple[str, ...] = ()
    previous: Mapping[str, Loop] = field(default_factory=dict)
    more: bool = False

    def __bool__(self) -> bool:
        return bool(self.loaded or self.removed)


@dataclass(slots=True)
class LoopFolder:
    folder: Path
    loader: LoopLoader
    log: DaemonLog
    loops: ServedLoops = field(init=False)
    _stamps: dict[str, int] = field(default_factory=dict)
    """Each file's modification time and size, hashed (one number a file where a pair took three
    objects)."""
    _ids: dict[str, str] = field(default_factory=dict)
    """The loop id of each file served, by file name."""
    _clashes: set[str] = field(default_factory=set)
    """Files refused because another file defines their loop id: tried again once one goes."""
    _retry: set[str] = field(default_factory=set)
    fallbacks: tuple[Path, ...] = ()
    """Shipped loop files scheduled unless a file of the folder defines their loop id."""
    _shipped: dict[Path, LoadReport | None] = field(default_factory=dict)
    _replaced: dict[str, LoopRecord] = field(default_factory=dict)
    """The records of the loops the last scan replaced, by id (``refuse`` puts one back)."""
    _left: tuple[dict[str, int | None], list[str], int] | None = None
    """The stamp of each of the folder's files, the changed ones and how many of them are
    loaded, when the last scan stopped at ``most``: the next goes on from them without listing
    the folder again (a daemon starting with 10,000 files listed and stat-ed them all once per
    batch). Files are kept by name alone: a ``Path`` each, kept across the batches, took more
    memory than the loops' records and left it scattered among them once freed."""

    def __post_init__(self) -> None:
        self.loader = self.loader.serving()
        self.loops = ServedLoops(self.loader)

    def scan(self, most: int | None = None) -> Changes:
        """Load what changed since the last scan, at most ``most`` files (the others on the next
        scan, which goes on from them: a daemon starting with thousands of files keeps a few
        hundred definitions at once, not all of them); the first scan loads every file."""
        removed: list[str | None] = []
        done = 0
        if self._left is None:
            names = [str(path) for path in find_loop_files([self.folder])]
            stamps = {name: _stamp(name) for name in names}
            removed = [self._forget(name) for name in sorted(set(self._ids) - set(stamps))]
            if removed:
                self._retry |= self._clashes & set(stamps)
            for name in set(self._stamps) - set(stamps):
                del self._stamps[name]
            changed = [
                name
                for name in sorted(stamps)
                if stamps[name] != self._stamps.get(name) or name in self._retry
            ]
        else:
            stamps, changed, done = self._left
        end = len(changed) if most is None else min(len(changed), done + most)
        more = end < len(changed)
        self._left = (stamps, changed, end) if more else None
        self._replaced = {}
        loaded: list[Loop] = []
        for name in changed[done:end]:
            self._retry.discard(name)
            stamp = stamps[name]
            if stamp is None:
                self._stamps.pop(name, None)
            else:
                self._stamps[name] = stamp
            if (loop := self._load(name)) is not None:
                loaded.append(loop)
        if not more:
            loaded.extend(self._fallen_back({Path(name).resolve() for name in stamps}))
        kept = {loop.id for loop in loaded}
        previous = {key: self.loops.build(record) for key, record in self._replaced.items()}
        gone = tuple(i for i in removed if i and i not in kept)
        return Changes(tuple(loaded), gone, previous, more)

    def refuse(self, loop: Loop, previous: Loop | None) -> None:
        """Take back ``loop``, loaded by the last scan but not schedulable: ``previous`` (the
        version it replaced) runs again, or nothing under its id; its file is tried again once
        it changes."""
        name = loop.file
        if self._ids.get(name) == loop.id and (previous is None or previous.file != loop.file):
            del self._ids[name]
        if Path(name) in self._shipped:
            self._shipped[Path(name)] = None
        if previous is None:
            self.loops.remove(loop.id)
        else:
            self.loops.restore(self._replaced[loop.id])

    def _load(self, name: str) -> Loop | None:
        try:
            report = self.loader.load_file(Path(name), self.folder)
        except Exception as exc:  # a fault loading one file refuses that file alone
            self.log.line("error", f"cannot load: {reason(exc)}", file=name)
            return None
        if report.loop is None or not report.ok:
            kept = " (the previous version keeps running)" if name in self._ids else ""
            for problem in report.errors:
                self.log.line("error", problem.format(), file=name)
            self.log.line("skip", f"invalid loop file, not scheduled{kept}", file=name)
            return None
        loop = report.loop
        owner = self.loops.records.get(loop.id)
        if owner is not None and owner.file != name and self._ids.get(owner.file) == loop.id:
            self._clashes.add(name)
            self.log.line(
                "error",
                f"loop id '{loop.id}' is already defined in {owner.file}: rename one of them",
                file=name,
            )
            return None
        self._clashes.discard(name)
        old_id = self._ids.get(name)
        if old_id is not None and old_id != loop.id:
            self.loops.remove(old_id)
        self._ids[name] = loop.id
        if (replaced := self.loops.records.get(loop.id)) is not None:
            self._replaced.setdefault(loop.id, replaced)
        self.loops.put(loop, report.text, name)
        return loop

    def _fallen_back(self, files: set[Path]) -> list[Loop]:
        """The shipped loops newly scheduled: those whose id no loop of the folder has (each
        file loaded once; one that is a file of the folder is that file)."""
        added = []
        for path in self.fallbacks:
            if path not in self._shipped:
                inside = path.resolve() in files
                self._shipped[path] = None if inside else self._load_shipped(path)
            report = self._shipped[path]
            if report is not None and report.loop is not None and report.loop.id not in self.loops:
                self.loops.put(report.loop, report.text)
                added.append(report.loop)
        return added

    def _load_shipped(self, path: Path) -> LoadReport | None:
        report = self.loader.load_file(path)
        for problem in report.errors:
            self.log.line("error", problem.format(), file=str(path))
        return report if report.ok else None

    def _forget(self, name: str) -> str | None:
        loop_id = self._ids.pop(name, None)
        if loop_id is not None:
            self.loops.remove(loop_id)
        return loop_id


def _stamp(name: str) -> int | None:
    try:
        stat = os.stat(name)
    except OSError:
        return None
    return hash((stat.st_mtime_ns, stat.st_size))


def reason(exc: Exception) -> str:
    """What a log line says of an error: loopengine's own message, or an unexpected error's type
    and message."""
    return str(exc) if isinstance(exc, LoopEngineError) else f"{type(exc).__name__}: {exc}"
