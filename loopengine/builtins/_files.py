"""Built-in file actions: ``file.write``, ``file.move`` and ``file.delete``, on paths under
``actions.root`` reached without following a link (see ``_confined``), and ``file.undo``, the
rollback skill of all three. Each call leaves in the trash, beside the store, what undoing it
needs (the deleted entry, the overwritten file) and a record of what it did, written last and
named by the call's idempotency key: a resumed re-run of a recorded call returns its result
instead of acting twice, and a rollback finds what to undo. The calls prune the trash (see
``_trash``)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Annotated, Literal, TypedDict

from pydantic import Field

from loopengine._json import JSON, JSONObject
from loopengine.builtins._confined import MAX_PATH, Place, Root, identity, rename_new
from loopengine.builtins._trash import prune
from loopengine.errors import SkillError
from loopengine.skills import SkillContext, skill

__all__ = [
    "MAX_CONTENT",
    "actions_root",
    "file_delete",
    "file_move",
    "file_undo",
    "file_write",
    "trash_folder",
]

MAX_CONTENT = 16 * 1_048_576
"""Most bytes ``file.write`` writes (its content as UTF-8)."""

_ENTRY = "entry"
_RECORD = "record.json"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1_048_576

_Path = Annotated[str, Field(min_length=1, max_length=MAX_PATH)]


def actions_root(ctx: SkillContext) -> Path:
    """The folder the file and shell actions work under: ``actions.root`` (from the config's
    folder), else the loop file's folder, else the config's."""
    if ctx.config.actions.root is not None:
        return Path(os.path.abspath(ctx.base / ctx.config.actions.root))
    if ctx.loop_file is not None:
        return Path(os.path.abspath(ctx.loop_file)).parent
    return Path(os.path.abspath(ctx.base))


def trash_folder(ctx: SkillContext) -> Path:
    """Where the file actions keep what they took away: beside the store's SQLite file
    (``<file>-trash``), else ``.loopengine/trash`` in the config's folder."""
    file = None if ctx.store is None else ctx.store.file
    if file is not None:
        return Path(os.path.abspath(file.with_name(f"{file.name}-trash")))
    return Path(os.path.abspath(ctx.base / ".loopengine" / "trash"))


class _Record(TypedDict, total=False):
    """A call's ``record.json``, as the call wrote it: what it did and what undoing it needs."""

    op: str
    execution: str
    root: str
    result: JSONObject
    undone: JSONObject
    previous: bool
    made: list[str]
    written: list[int]
    moved: list[int]


class _Journal:
    """The trash folder of one call, named by its idempotency key: ``entry``, what the call took
    away, and ``record.json``, what it did, written once it is done."""

    def __init__(self, trash: Path, key: str, execution_id: str) -> None:
        self.folder = trash / hashlib.sha256(key.encode()).hexdigest()[:32]
        self.execution_id = execution_id

    def read(self) -> _Record | None:
        """The call's record; None if it never began (a folder without one: it stopped half
        way, and what it took away may be there)."""
        try:
            with open(self.folder / _RECORD, "rb") as stream:
                record: _Record = json.load(stream)
        except FileNotFoundError:
            if self.folder.exists():
                raise self._half_way() from None
            return None
        return record

    def _half_way(self) -> FileExistsError:
        said = f"an earlier attempt of this call stopped half way: see {self.folder}"
        return FileExistsError(said)

    @contextmanager
    def begun(self) -> Iterator[int]:
        """The call's folder, made now and open; left only if the block put something in it."""
        self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            self.folder.mkdir(mode=0o700)
        except FileExistsError:
            raise self._half_way() from None
        with self.opened() as folder:
            try:
                yield folder
            except BaseException:
                with suppress(OSError):
                    os.rmdir(self.folder)
                raise

    @contextmanager
    def opened(self) -> Iterator[int]:
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield folder
        finally:
            os.close(folder)

    def done(self, folder: int, root: Root, result: JSONObject, **undo: JSON) -> None:
        """Record what the call did (``result``), in which execution, and what undoing it needs."""
        done = {"execution": self.execution_id, "root": str(root.path), "result": result}
        self.write(folder, {**undo, **done})

    def write(self, folder: int, record: Mapping[str, object]) -> None:
        """Replace the record at once: a reader sees the old one or the new one."""
        temp = f"{_RECORD}.{secrets.token_hex(4)}"
        with os.fdopen(os.open(temp, _CREATE, 0o600, dir_fd=folder), "w") as stream:
            json.dump(record, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.rename(temp, _RECORD, src_dir_fd=folder, dst_dir_fd=folder)


@contextmanager
def _acting(name: str) -> Iterator[None]:
    """What the file system refuses, as one line naming the action."""
    try:
        yield
    except OSError as exc:
        said = f"{exc.strerror}: {exc.filename!r}" if exc.strerror and exc.filename else exc
        raise SkillError(f"{name}: {said}") from None
    except ValueError as exc:
        raise SkillError(f"{name}: {exc}") from None


def _root(ctx: SkillContext, path: Path | None = None) -> Root:
    """The root, closed to the config, the store and the trash."""
    return Root(path or actions_root(ctx), (*ctx.private, trash_folder(ctx)))


def _recorded(
    ctx: SkillContext, name: str, act: Callable[[Root, _Journal], JSONObject]
) -> JSONObject:
    """``act``'s result, or the one recorded under this call's key (a resumed re-run)."""
    journal = _Journal(trash_folder(ctx), ctx.idempotency_key, ctx.execution_id)
    with _acting(name):
        record = journal.read()
        if record is not None:
            return record["result"]
        with _root(ctx) as root:
            result = act(root, journal)
    _prune(ctx)
    return result


def _prune(ctx: SkillContext) -> None:
    """Prune the trash when due; a prune that fails (an entry it cannot remove, the store out of
    reach, no event loop to ask it) never fails the action, which has done its part: it is
    logged."""
    try:
        keep_days = ctx.config.actions.trash_days
        prune(trash_folder(ctx), ctx.clock(), keep_days, lambda ids: _unfinished(ctx, ids))
    except Exception as exc:
        ctx.logger.warning("the trash was not pruned: %s: %s", type(exc).__name__, exc)


def _unfinished(ctx: SkillContext, ids: list[str]) -> Collection[str]:
    """Which of the executions ``ids`` the store holds unfinished (a skill's worker thread asks
    the engine's event loop)."""
    if ctx.store is None:
        return ()
    import anyio.from_thread

    from loopengine.store import executions

    return anyio.from_thread.run(ctx.store.read, executions.unfinished, ids)


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    return "link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "file"


def _regular(root: Root, place: Place, info: os.stat_result | None) -> None:
    """A file to write over must be a regular one, open to actions (a link is not followed)."""
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        raise PermissionError(f"{place.shown!r} is a link: links are not followed")
    if not stat.S_ISREG(info.st_mode):
        raise PermissionError(f"{place.shown!r} is not a regular file")
    root.check(place.shown, info)


def _copy_old(place: Place, old: os.stat_result, out: IO[bytes]) -> None:
    """The bytes ``old`` held when it was looked at, into ``out``."""
    with os.fdopen(os.open(place.name, _READ, dir_fd=place.folder), "rb") as stream:
        if identity(os.fstat(stream.fileno())) != identity(old):
            raise PermissionError(f"{place.shown!r} changed during the action")
        left = old.st_size
        while left > 0 and (chunk := stream.read(min(_CHUNK, left))):
            out.write(chunk)
            left -= len(chunk)


def _written(
    place: Place, data: bytes, old: os.stat_result | None, append: bool
) -> tuple[str, os.stat_result]:
    """A new file beside ``place`` holding ``data`` (after the old bytes when ``append``), with
    the old file's permissions: its name and what it is."""
    temp = f".loopengine-{secrets.token_hex(6)}.tmp"
    try:
        with os.fdopen(os.open(temp, _CREATE, 0o666, dir_fd=place.folder), "wb") as stream:
            if old is not None:
                os.fchmod(stream.fileno(), stat.S_IMODE(old.st_mode))
                if append:
                    _copy_old(place, old, stream)
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
            return temp, os.fstat(stream.fileno())
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=place.folder)
        raise


def _swap(place: Place, temp: str, old: os.stat_result | None, kept: int) -> None:
    """Keep the old file (another link to it) in the folder ``kept``, then rename ``temp`` over
    it; nothing changed if either fails."""
    try:
        if old is not None:
            os.link(
                place.name, _ENTRY, src_dir_fd=place.folder, dst_dir_fd=kept, follow_symlinks=False
            )
            if identity(os.lstat(_ENTRY, dir_fd=kept)) != identity(old):
                raise PermissionError(f"{place.shown!r} changed during the action")
        os.rename(temp, place.name, src_dir_fd=place.folder, dst_dir_fd=place.folder)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=place.folder)
        with suppress(FileNotFoundError):
            os.unlink(_ENTRY, dir_fd=kept)
        raise


def _dry(ctx: SkillContext, dry_run: bool) -> bool:
    return dry_run or ctx.dry_run


@skill(
    "file.write",
    description="Write a text file under actions.root at once (a temporary file renamed over "
    "it): `overwrite` replaces it, `append` adds to its end; `file.undo` restores it.",
)
def file_write(
    ctx: SkillContext,
    path: _Path,
    content: str,
    mode: Literal["overwrite", "append"] = "overwrite",
    dry_run: bool = False,
) -> JSONObject:
    """Write a text file.

    Args:
        path: File, relative to actions.root; missing folders are made.
        content: Text written, as UTF-8.
        mode: `overwrite` or `append`.
        dry_run: Change nothing; say what would be written.
    """
    data = content.encode()
    if len(data) > MAX_CONTENT:
        raise SkillError(f"file.write: the content is {len(data):,} bytes, over {MAX_CONTENT:,}")
    said: JSONObject = {"mode": mode, "bytes": len(data)}
    if _dry(ctx, dry_run):
        with _acting("file.write"), _root(ctx) as root:
            place = root.lookup(path)
            old = None if place is None else place.lstat()
            if place is not None:
                _regular(root, place, old)
            return {"dry_run": True, "path": root.shown(path), **said, "exists": old is not None}

    def act(root: Root, journal: _Journal) -> JSONObject:
        place = root.reach(path)
        old = place.lstat()
        _regular(root, place, old)
        with journal.begun() as kept:
            temp, new = _written(place, data, old, mode == "append")
            _swap(place, temp, old, kept)
            result: JSONObject = {
                "path": place.shown,
                **said,
                "size": new.st_size,
                "created": old is None,
            }
            journal.done(
                kept,
                root,
                result,
                op="write",
                made=list(place.made),
                written=list(identity(new)),
                previous=old is not None,
            )
        return result

    return _recorded(ctx, "file.write", act)


@skill(
    "file.move",
    description="Move (rename) a file or folder under actions.root to a target that does not "
    "exist yet; `file.undo` moves it back.",
)
def file_move(ctx: SkillContext, source: _Path, target: _Path, dry_run: bool = False) -> JSONObject:
    """Move a file or folder.

    Args:
        source: What is moved, relative to actions.root (a link is moved, not followed).
        target: Its new path, relative to actions.root; missing folders are made.
        dry_run: Change nothing; say what would be moved.
    """
    if _dry(ctx, dry_run):
        with _acting("file.move"), _root(ctx) as root:
            found, info = root.existing(source)
            place = root.lookup(target)
            if place is not None and place.lstat() is not None:
                raise FileExistsError(f"{place.shown!r} exists already: name a new one")
            shown = {"source": found.shown, "target": root.shown(target), "kind": _kind(info)}
            return {"dry_run": True, **shown}

    def act(root: Root, journal: _Journal) -> JSONObject:
        found, info = root.existing(source)
        place = root.reach(target)
        with journal.begun() as kept:
            rename_new(found, place)
            result: JSONObject = {"source": found.shown, "target": place.shown, "kind": _kind(info)}
            moved = list(identity(info))
            journal.done(kept, root, result, op="move", made=list(place.made), moved=moved)
        return result

    return _recorded(ctx, "file.move", act)


@skill(
    "file.delete",
    description="Delete a file or folder under actions.root: it goes to the trash beside the "
    "store, whence `file.undo` restores it.",
)
def file_delete(ctx: SkillContext, path: _Path, dry_run: bool = False) -> JSONObject:
    """Delete a file or folder (into the trash).

    Args:
        path: What is deleted, relative to actions.root (a link is deleted, not followed).
        dry_run: Change nothing; say what would be deleted.
    """
    if _dry(ctx, dry_run):
        with _acting("file.delete"), _root(ctx) as root:
            found, info = root.existing(path)
            return {"dry_run": True, "path": found.shown, "kind": _kind(info)}

    def act(root: Root, journal: _Journal) -> JSONObject:
        found, info = root.existing(path)
        with journal.begun() as kept:
            _to_trash(found, Place(kept, _ENTRY, str(journal.folder / _ENTRY)))
            result: JSONObject = {
                "path": found.shown,
                "kind": _kind(info),
                "trash": str(journal.folder),
            }
            journal.done(kept, root, result, op="delete")
        return result

    return _recorded(ctx, "file.delete", act)


def _to_trash(found: Place, entry: Place) -> None:
    try:
        rename_new(found, entry)
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise OSError(
                f"the trash ({entry.shown}) is on another file system than {found.shown!r}: keep "
                "the store on the file system of actions.root"
            ) from None
        raise


def _same(place: Place, info: os.stat_result, recorded: list[int]) -> None:
    if list(identity(info)) != recorded:
        raise PermissionError(f"{place.shown!r} changed since the action: it is left as it is")


def _unmake(root: Root, made: list[str]) -> None:
    """Remove the folders an action made, innermost first, as long as they are empty."""
    for shown in reversed(made):
        place = root.lookup(shown)
        try:
            if place is not None:
                os.rmdir(place.name, dir_fd=place.folder)
        except OSError:
            return


def _undo_write(root: Root, record: _Record, kept: int) -> JSONObject:
    """Put the old file back, or remove the one the action made."""
    place, info = root.existing(str(record["result"]["path"]))
    _same(place, info, record["written"])
    if record["previous"]:
        os.rename(_ENTRY, place.name, src_dir_fd=kept, dst_dir_fd=place.folder)
    else:
        os.unlink(place.name, dir_fd=place.folder)
        _unmake(root, record["made"])
    return {"path": place.shown, "restored": record["previous"], "removed": not record["previous"]}


def _undo_move(root: Root, record: _Record, kept: int) -> JSONObject:
    moved, info = root.existing(str(record["result"]["target"]))
    _same(moved, info, record["moved"])
    back = root.reach(str(record["result"]["source"]))
    rename_new(moved, back)
    _unmake(root, record["made"])
    return {"source": moved.shown, "target": back.shown}


def _undo_delete(root: Root, record: _Record, kept: int) -> JSONObject:
    back = root.reach(str(record["result"]["path"]))
    rename_new(Place(kept, _ENTRY, "the trash"), back)
    return {"path": back.shown, "restored": True}


_UNDO = {"write": _undo_write, "move": _undo_move, "delete": _undo_delete}


@skill(
    "file.undo",
    description="Undo what `file.write`, `file.move` or `file.delete` did: name it as their "
    "action's `rollback_skill` (no params).",
)
def file_undo(ctx: SkillContext) -> JSONObject:
    key = ctx.undoes
    if key is None:
        raise SkillError("file.undo undoes a file action: name it as that action's rollback_skill")
    journal = _Journal(trash_folder(ctx), key, ctx.execution_id)
    with _acting("file.undo"):
        record = journal.read()
    if record is None:
        raise SkillError(
            f"file.undo: no file action is recorded under {key!r}: the action ran no file "
            "skill, or its trash folder is gone"
        )
    if "undone" in record:
        return record["undone"]
    done = f"file.{record['op']}"
    if ctx.dry_run:
        return {"dry_run": True, "undo": done, **record["result"]}
    with _acting("file.undo"), _root(ctx, Path(record["root"])) as root, journal.opened() as kept:
        undone: JSONObject = {"undone": done, **_UNDO[record["op"]](root, record, kept)}
        journal.write(kept, {**record, "undone": undone})
    return undone
