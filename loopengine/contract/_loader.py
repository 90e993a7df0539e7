"""Load loop files: YAML with positions, JSON Schema, then semantic checks; all errors at once."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from copy import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopengine._diagnostics import Diagnostic, shown_key
from loopengine.contract._documents import build_model, loop_validator, schema_check
from loopengine.contract._yaml_source import YamlDocument, parse_yaml, read_source
from loopengine.contract.checks import Env, semantic_diagnostics
from loopengine.errors import ContractError

if TYPE_CHECKING:
    from loopengine.contract._loop import LoopSpec

__all__ = [
    "CONFIG_NAMES",
    "LOOP_SUFFIXES",
    "LoadReport",
    "Loop",
    "LoopIds",
    "LoopLoader",
    "find_loop_files",
]

LOOP_SUFFIXES = (".yaml", ".yml")
CONFIG_NAMES = frozenset({"loopengine.yaml", "loopengine.yml"})
"""Names of config files: never loops, skipped in a folder of loops."""


@dataclass(frozen=True, slots=True)
class Loop:
    """A validated loop: its spec (expressions compiled), its file, the hash of its text
    (``version``) and a hash of each top-level key (``parts``), which says what changed between
    two versions (a comment changes the version, not the parts)."""

    spec: LoopSpec
    file: str
    version: str
    parts: Mapping[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.spec.id

    def changed_since(self, parts: Mapping[str, str]) -> list[str]:
        """The top-level keys whose content differs from ``parts`` (added and removed ones too)."""
        return sorted(key for key in {*parts, *self.parts} if parts.get(key) != self.parts.get(key))


def _parts(data: Mapping[str, Any]) -> dict[str, str]:
    return {
        key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
        for key, value in data.items()
    }


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What loading one file gave: the loop when valid (only its id when the loader checks
    without building), and every diagnostic."""

    file: str
    loop: Loop | None
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    id_at: tuple[int, int] = (1, 1)
    checked_id: str | None = None
    text: str = ""
    """A valid loop's source, from which ``LoopLoader.load_text`` builds it again."""

    @property
    def loop_id(self) -> str | None:
        return self.loop.id if self.loop is not None else self.checked_id

    @property
    def ok(self) -> bool:
        return self.loop_id is not None and not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def valid(self) -> Loop:
        """The loop, or ``ContractError`` carrying every error (the first one as its message)."""
        if self.loop is None or not self.ok:
            problems = self.errors
            first = problems[0].format() if problems else f"{self.file}: invalid"
            raise ContractError(first, problems)
        return self.loop


def _unwrap(document: YamlDocument) -> tuple[YamlDocument, list[Diagnostic]]:
    data = document.data
    if not (isinstance(data, dict) and "Loop" in data):
        return document, []
    extra = [
        document.diagnostic(
            (key,),
            f"unknown key '{shown_key(key)}' beside 'Loop:'; move it under Loop:",
            at_key=True,
        )
        for key in data
        if key != "Loop"
    ]
    return document.within("Loop"), extra


def find_loop_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Each file given, and every ``*.yaml``/``*.yml`` below each folder (hidden ones and config
    files skipped), in order."""
    for path in paths:
        if path.is_dir():
            yield from _loop_files_below(path)
        else:
            yield path


def _loop_files_below(folder: Path) -> list[Path]:
    """The loop files below ``folder``, ordered as paths are, hidden folders not entered nor
    links to folders followed (a daemon rescans its folder of a thousand files: ``rglob``, a
    ``Path`` per entry and a ``stat`` per file took 80 ms, this 20)."""
    found: list[str] = []
    pending = [str(folder)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif _is_loop_file(entry):
                    found.append(entry.path)
    return [Path(path) for path in sorted(found, key=lambda path: path.split(os.sep))]


def _is_loop_file(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    return name not in CONFIG_NAMES and name.endswith(LOOP_SUFFIXES) and entry.is_file()


class LoopLoader:
    """Loads loops against one registry and config; reusable across many files.

    ``build=False`` checks without building the loop (``validate``): the schema and the semantic
    checks (which compile every expression and template the model does; tests keep the two
    lists equal and fuzz the rest) refuse what the model would, and the model's classes cost a
    third of a check's start-up."""

    def __init__(self, env: Env, *, build: bool = True) -> None:
        self.env = env
        self.build = build

    def serving(self) -> LoopLoader:
        """This loader as the daemon loads: a webhook whose secret is not set is an error."""
        served = copy(self)
        served.env = replace(self.env, secrets_required=True)
        return served

    def load_text(self, text: str, file: str) -> LoadReport:
        try:
            document = parse_yaml(text, file)
        except ContractError as exc:
            return LoadReport(file, None, exc.diagnostics)
        body, problems = _unwrap(document)
        problems += schema_check(loop_validator(), body)
        if isinstance(body.data, dict):
            problems += semantic_diagnostics(body, self.env)
        problems.sort(key=lambda d: (d.line, d.column))
        if any(d.is_error for d in problems):
            return LoadReport(file, None, tuple(problems))
        position = body.locate(("id",))
        id_at = (position.line, position.column)
        if not self.build:
            return LoadReport(file, None, tuple(problems), id_at, str(body.data["id"]))
        from loopengine.contract._loop import LoopSpec
        from loopengine.expr import remember_secrets

        spec, model_problems = build_model(LoopSpec, body)
        if spec is None:
            return LoadReport(file, None, tuple(problems + model_problems))
        version = hashlib.sha256(text.encode()).hexdigest()
        loop = Loop(spec, file, version, _parts(body.data))
        remember_secrets(body.data, os.environ)
        return LoadReport(file, loop, tuple(problems), id_at, text=text)

    def load_file(self, path: Path, within: Path | None = None) -> LoadReport:
        """Load one file; when found in ``within`` (a folder, or the file itself when named),
        only where it resolves inside it: a link out of the folder is refused, unread (and a
        file that becomes a link once checked is not read)."""
        source = path
        if within is not None and path.is_symlink():
            source = path.resolve()
            if not source.is_relative_to(within.resolve()):
                return LoadReport(str(path), None, (_outside(path, source, within),))
        try:
            text = read_source(source, name=str(path), follow_links=within is None)
        except ContractError as exc:
            return LoadReport(str(path), None, tuple(exc.diagnostics))
        return self.load_text(text, str(path))

    def iter_paths(self, paths: Iterable[Path]) -> Iterator[LoadReport]:
        """Load every loop file under ``paths``, one report at a time so that a caller keeping only
        what it prints holds one loop at once; a loop id used twice is an error on the second."""
        ids = LoopIds()
        for given in paths:
            for path in find_loop_files([given]):
                yield ids.claim(self.load_file(path, given))

    def load_paths(self, paths: Iterable[Path]) -> list[LoadReport]:
        """Every report of ``iter_paths``."""
        return list(self.iter_paths(paths))


def _outside(path: Path, target: Path, folder: Path) -> Diagnostic:
    message = (
        f"a link to {target}, outside {folder}: not read (move the file into the folder, or link "
        "to a file inside it)"
    )
    return Diagnostic(str(path), 1, 1, (), message)


class LoopIds:
    """The loop ids of one loops folder seen so far, each with where it is declared."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[str, tuple[int, int]]] = {}

    def claim(self, report: LoadReport) -> LoadReport:
        """``report``, or when its id was declared by another file, ``report`` refused with an
        error at its id naming the first file and line."""
        loop_id = report.loop_id
        if loop_id is None:
            return report
        owner, (line, column) = self._first.setdefault(loop_id, (report.file, report.id_at))
        if owner == report.file:
            return report
        message = (
            f"loop id '{loop_id}' is already used by {owner}:{line}:{column}; ids must be unique "
            "in a loops folder (rename one of them)"
        )
        duplicate = Diagnostic(report.file, *report.id_at, ("id",), message)
        return LoadReport(report.file, None, (*report.diagnostics, duplicate))
