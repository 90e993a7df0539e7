"""The settings a command runs with: ``loopengine.yaml`` (found, read and checked), the folder its
relative paths start from, and the store's URL. Reading them loads no skill and no database layer,
and the config's model is built only when a command needs more than the store's URL: the
commands that only read start without pydantic.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from loopengine._hosts import unlisted
from loopengine._suggestions import did_you_mean
from loopengine.contract import (
    COLLECTION_NAME,
    MAX_COLLECTION_NAME,
    Diagnostic,
    YamlDocument,
    config_validator,
    parse_yaml,
    read_source,
    schema_check,
    shipped_schema,
)
from loopengine.errors import ContractError

if TYPE_CHECKING:
    from loopengine.contract import Config
    from loopengine.store.urls import StoreUrl

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "DATABASE_ENV",
    "Settings",
    "find_config",
    "private_paths",
    "read_settings",
]

CONFIG_NAME = "loopengine.yaml"
CONFIG_ENV = "LOOPENGINE_CONFIG"
DATABASE_ENV = "LOOPENGINE_DATABASE"
_STORAGE_SCHEMES = frozenset({"file", "sqlite", "postgresql", "postgres", "redis", "rediss"})
_LOG = logging.getLogger("loopengine.settings")


@dataclass(frozen=True)
class Settings:
    """The config file's folder (relative paths start there), the file (None: defaults) and its
    document, already checked against the config schema."""

    base: Path
    file: Path | None
    document: YamlDocument | None = None

    @cached_property
    def config(self) -> Config:
        """The config's model with its semantic checks, built on first use."""
        return _built(self.document)

    @cached_property
    def _store_url(self) -> StoreUrl:
        """``$LOOPENGINE_DATABASE``, else the config's; a relative SQLite path starts at the
        config's folder. The debug log names the store when a command first asks for it. The
        store parses it: every caller opens the store right after, which loads it anyway."""
        from loopengine.store.urls import store_url

        found = store_url(os.environ.get(DATABASE_ENV) or self._database(), self.base)
        _LOG.debug("store: %s", found.shown)
        return found

    @property
    def database_url(self) -> str:
        """The store's URL as this process opens it (``_store_url``)."""
        return self._store_url.url

    @property
    def sqlite_file(self) -> Path | None:
        """The database file when the store is a SQLite file."""
        return self._store_url.file

    @property
    def store(self) -> str:
        """The store as a person names it: its SQLite file, else its URL without the password."""
        return self._store_url.shown

    def no_store(self) -> ContractError:
        """What a command that creates no store says when there is none where it looks."""
        return ContractError(
            f"no store at {self.store}; run from the project folder or pass --config"
        )

    @property
    def private(self) -> tuple[Path, ...]:
        """What the LLM tools never see (``private_paths``), the store as this process opens it."""
        return private_paths(self.base, self.file, self.sqlite_file)

    @property
    def plugins(self) -> list[str]:
        """The plugins to load (``plugins:``)."""
        return list(self._value("plugins") or ())

    @property
    def storage_names(self) -> frozenset[str]:
        """The names of the configured artifact storages (``storage:``)."""
        return frozenset(self._value("storage") or ())

    @contextmanager
    def traced(self) -> Iterator[None]:
        """Export spans while the block runs, and those still held at its end, when
        ``tracing.otlp_endpoint`` or ``$OTEL_EXPORTER_OTLP_ENDPOINT`` asks for them. Without
        OpenTelemetry installed, ``ContractError`` at the config's line when the config asks;
        no traces when only the environment does, as it may be set for other programs."""
        import loopengine._tracing as tracing

        wanted = tracing.exporting(self._value("tracing"), os.environ)
        if wanted is None:
            yield
            return
        try:
            tracing.start(wanted)
        except ImportError:
            missing = f"traces asked for, but OpenTelemetry is not installed: {tracing.INSTALL}"
            configured = (self._value("tracing") or {}).get("otlp_endpoint")
            if configured:
                assert self.document is not None
                where = self.document.diagnostic(("tracing", "otlp_endpoint"), missing)
                raise ContractError(where.format()) from None
            logging.getLogger("loopengine").debug("no traces: $OTEL_*: %s", missing)
            yield
            return
        try:
            yield
        finally:
            tracing.disable()

    def _database(self) -> str:
        return str(self._value("database"))

    def _value(self, key: str) -> Any:
        """A top-level value of the checked document, else the schema's default (None for an
        empty collection): what the model would hold, without building it."""
        data = self.document.data if self.document is not None else None
        if isinstance(data, dict) and key in data:
            return data[key]
        return shipped_schema("config")["$defs"]["Config"]["properties"][key].get("default")


def private_paths(base: Path, config: Path | None, store: Path | None) -> tuple[Path, ...]:
    """What the LLM tools never read, list nor search, whatever their root: the config file (it
    may hold passwords), ``.loopengine/`` (the default store, artifacts) and the SQLite store's
    folder, or only the store's files when that folder holds the config's (closing it would
    close the workspace)."""
    base = base.resolve()
    found = [base / ".loopengine", *([] if config is None else [config.resolve()])]
    if store is not None:
        store = (base / store).resolve()
        found += [
            store.with_name(store.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")
        ]
        folder = store.parent
        if not (folder == base or folder in base.parents):
            found.append(folder)
    return tuple(found)


def find_config(explicit: Path | None = None, start: Path | None = None) -> Path | None:
    """The config a command uses, found as git finds ``.git``: ``--config``, else the nearest
    ``loopengine.yaml`` from ``start`` (default: the working directory) upwards, else
    ``$LOOPENGINE_CONFIG``; None: defaults."""
    if explicit is not None:
        return explicit
    folder = start or Path()
    candidates = [folder, *folder.parents]
    if not folder.is_absolute():  # relative paths stay relative, as the user wrote them
        candidates += Path.cwd().parents
    for candidate in candidates:
        if (candidate / CONFIG_NAME).is_file():
            return candidate / CONFIG_NAME
    from_env = os.environ.get(CONFIG_ENV)
    return Path(from_env) if from_env else None


def _semantic(document: YamlDocument) -> list[Diagnostic]:
    """What the schema cannot say of a config it accepts: routing, chain and the autolearn
    roles name nodes that exist, storage URLs have a known scheme."""
    data: dict[str, Any] = document.data
    cluster = data.get("cluster") or {}
    nodes = cluster.get("nodes") or {}
    problems: list[Diagnostic] = []
    for category, names in (cluster.get("routing") or {}).items():
        for index, name in enumerate(names):
            if name not in nodes:
                message = f"routing names node '{name}', which is not under cluster.nodes"
                path = ("cluster", "routing", category, index)
                problems.append(document.diagnostic(path, message + did_you_mean(name, nodes)))
    if nodes and "chain" in cluster:
        for index, name in enumerate(cluster["chain"]):
            if name not in nodes:
                message = f"chain names node '{name}', which is not under cluster.nodes"
                where = ("cluster", "chain", index)
                problems.append(document.diagnostic(where, message + did_you_mean(name, nodes)))
    learning = data.get("autolearn") or {}
    if learning.get("min_samples", 5) > learning.get("window", 20):
        message = "autolearn.min_samples is over autolearn.window: no node could ever be ranked"
        problems.append(document.diagnostic(("autolearn", "min_samples"), message))
    for role in ("grader", "research", "analysis", "review"):
        name = learning.get(role)
        if nodes and name is not None and name not in nodes:
            message = f"autolearn.{role} names node '{name}', which is not under cluster.nodes"
            problems.append(
                document.diagnostic(("autolearn", role), message + did_you_mean(name, nodes))
            )
    allow = ((data.get("actions") or {}).get("http") or {}).get("allow") or []
    problems += _knowledge_problems(document, nodes, allow)
    for name, url in (data.get("storage") or {}).items():
        scheme = urlsplit(url).scheme.split("+")[0]
        if scheme not in _STORAGE_SCHEMES:
            known = ", ".join(sorted(_STORAGE_SCHEMES))
            message = f"storage URL scheme '{scheme}' is not supported (known: {known})"
            problems.append(document.diagnostic(("storage", name), message))
    return problems


def _source_problem(source: str) -> str | None:
    """Why a knowledge source may not be read (it leaves the config's folder), or None."""
    if PurePosixPath(source).is_absolute() or PureWindowsPath(source).is_absolute():
        return f"source '{source}' is absolute: write it relative to this file's folder"
    if ".." in PurePosixPath(source.replace("\\", "/")).parts:
        return f"source '{source}' leaves this file's folder: keep sources inside it"
    return None


def _knowledge_problems(
    document: YamlDocument, nodes: Mapping[str, object], allow: Sequence[str]
) -> list[Diagnostic]:
    """Knowledge collections have names a URL and a command line can hold, sources inside the
    config's folder, name nodes that exist, and a web search whose host ``allow`` lists."""
    problems: list[Diagnostic] = []
    for name, collection in (document.data.get("knowledge") or {}).items():
        where = ("knowledge", name)
        if not COLLECTION_NAME.fullmatch(name):
            message = (
                f"collection name '{name}': use letters, digits, '_', '-' and '.' "
                f"(at most {MAX_COLLECTION_NAME}, the first a letter or digit)"
            )
            problems.append(document.diagnostic(where, message, at_key=True))
        for index, source in enumerate(collection.get("sources") or ()):
            if (problem := _source_problem(source)) is not None:
                problems.append(document.diagnostic((*where, "sources", index), problem))
        embedder = (collection.get("embeddings") or {}).get("node")
        for path, node in (
            (("grader",), collection.get("grader")),
            (("embeddings", "node"), embedder),
        ):
            if node is not None and node not in nodes:
                message = f"{'.'.join(path)} names node '{node}', which is not under cluster.nodes"
                problems.append(
                    document.diagnostic((*where, *path), message + did_you_mean(node, nodes))
                )
        url = (collection.get("web") or {}).get("url")
        if url is not None and (problem := unlisted(url, allow, "actions.http.allow")):
            problems.append(document.diagnostic((*where, "web", "url"), f"web search {problem}"))
    return problems


def _built(document: YamlDocument | None) -> Config:
    from loopengine.contract import Config, build_model

    if document is None or document.data is None:
        return Config()
    config, problems = build_model(Config, document)
    if problems or config is None:
        raise ContractError(problems[0].format() if problems else document.file, problems)
    return config


def read_settings(config_file: Path | None = None) -> Settings:
    """The settings, the config file checked against its schema (defaults when there is none),
    without loading any skill; the secrets it names are known from then on (masked wherever
    they are written), and the debug log names it."""
    file = find_config(config_file)
    _LOG.debug("config: %s", "none (defaults)" if file is None else file.resolve())
    if file is None:
        return Settings(Path.cwd(), None)
    text = read_source(file)
    document = parse_yaml(text, str(file))
    if document.data is not None:
        problems = schema_check(config_validator(), document) or _semantic(document)
        if problems:
            raise ContractError(problems[0].format(), problems)
        if "secret" in text:  # the expression language loads only for a config that needs it
            from loopengine.expr import remember_secrets

            remember_secrets(document.data, os.environ)
    return Settings(file.resolve().parent, file, document)
