"""Tools offered to models: ``@tool`` functions, the sandboxed built-ins and the knowledge search
(``llm.Toolbox`` runs them with validated arguments)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import httpx
from pydantic import Field

from loopengine._json import JSONObject
from loopengine.builtins._knowledge import knowledge_tool
from loopengine.builtins._net import Allowed, send
from loopengine.builtins._sandbox import Sandbox
from loopengine.contract import Config
from loopengine.llm import TOOL_TIMEOUT_S, check_pattern
from loopengine.skills import ATTRIBUTE, Registry, ToolDef, tool
from loopengine.store import read_only_query

if TYPE_CHECKING:
    from loopengine.knowledge import Readable
    from loopengine.llm import Cluster

__all__ = [
    "MAX_READ",
    "MAX_ROWS",
    "MAX_SCANNED",
    "REGEX_TIMEOUT_S",
    "builtin_tools",
    "offered_tools",
]

_MAX_TEXT = 65_536
MAX_READ = 1_048_576
"""Most bytes a file tool reads from one file, whatever the model asks."""
MAX_SCANNED = 32 * 1_048_576
"""Most bytes ``search_files`` reads in one call."""
MAX_ROWS = 1000
MAX_ENTRIES = 1000
"""Most entries ``list_dir`` returns, and files ``search_files`` opens, per call."""
REGEX_TIMEOUT_S = 2.0


def _in_time(ends: float) -> None:
    """Stop a file tool's own thread once the call's deadline (monotonic) has passed."""
    if time.monotonic() > ends:
        raise TimeoutError(f"search_files ran past {TOOL_TIMEOUT_S:g} s: narrow it")


async def _fetch(url: str, allowed: Allowed, limit: int) -> JSONObject:
    """GET ``url`` from the checked address, reading at most ``limit`` bytes of the body."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as client:
        reply = await send(client, "GET", url, allowed, limit=limit)
    return {
        "status": reply.status,
        "content_type": reply.headers.get("content-type"),
        "text": reply.text,
        "truncated": reply.truncated,
    }


_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.S)
_READ = re.compile(r"(?i)(select|with)\b")
"""The first word of what ``query_db`` runs, comments skipped. A second statement is refused by
the driver (SQLite) or runs read-only (PostgreSQL), so a ';' inside a string is no reason to
refuse."""

_ReadSize = Annotated[int, Field(ge=1, le=MAX_READ)]
_Results = Annotated[int, Field(ge=1, le=1000)]
_Rows = Annotated[int, Field(ge=1, le=MAX_ROWS)]


def builtin_tools(
    root: Path,
    database_url: str | None,
    http_allow: Iterable[str] = (),
    *,
    private: Iterable[Path] = (),
    base: Path | None = None,
) -> list[ToolDef]:
    """``list_dir``, ``read_file``, ``search_files``, ``query_db`` and ``http_get``, sandboxed;
    the file tools never see ``private`` paths (files, or folders with all they hold) nor
    hidden ones below ``base`` or ``root``."""
    sandbox = Sandbox(root, private, base)
    allowed = Allowed(tuple(http_allow))

    @tool("list_dir")
    def list_dir(path: str = ".") -> list[JSONObject]:
        """List a folder of the workspace.

        Args:
            path: Folder, relative to the workspace root.
        """
        entries: list[JSONObject] = []
        for entry in sandbox.entries(sandbox.path(path))[:MAX_ENTRIES]:
            info = entry.stat(follow_symlinks=False)
            kind = "link" if entry.is_symlink() else "dir" if entry.is_dir() else "file"
            entries.append(
                {"name": entry.name, "type": kind, "size": info.st_size if kind == "file" else None}
            )
        return entries

    @tool("read_file")
    def read_file(path: str, max_bytes: _ReadSize = _MAX_TEXT) -> JSONObject:
        """Read a text file of the workspace.

        Args:
            path: File, relative to the workspace root.
            max_bytes: Most bytes returned.
        """
        data, more = sandbox.read(path, max_bytes)
        return {"path": path, "text": data.decode("utf-8", "replace"), "truncated": more}

    @tool("search_files")
    def search_files(pattern: str, path: str = ".", max_results: _Results = 50) -> list[JSONObject]:
        """Find lines matching a regular expression in the workspace's text files.

        Args:
            pattern: Regular expression (case-insensitive).
            path: Folder to search, relative to the workspace root.
            max_results: Most matching lines returned.
        """
        import regex  # stdlib re cannot be stopped: a model's pattern may backtrack for ever

        check_pattern(pattern)  # compiling cannot be stopped either, nor its memory capped
        try:
            expression = regex.compile(pattern, regex.IGNORECASE | regex.V0, cache_pattern=False)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        found: list[JSONObject] = []
        budget = MAX_SCANNED
        ends = time.monotonic() + TOOL_TIMEOUT_S  # the thread stops too, not only the wait
        for file in sandbox.files(sandbox.path(path), partial(_in_time, ends))[:MAX_ENTRIES]:
            data, _ = sandbox.read(file.relative_to(sandbox.root), min(MAX_READ, budget))
            budget -= len(data)
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                _in_time(ends)
                try:
                    hit = expression.search(line[:2000], timeout=REGEX_TIMEOUT_S)
                except TimeoutError:
                    raise ValueError(
                        f"the pattern took over {REGEX_TIMEOUT_S:g} s on one line: simplify it"
                    ) from None
                if hit:
                    found.append(
                        {
                            "file": str(file.relative_to(sandbox.root)),
                            "line": number,
                            "text": line[:300],
                        }
                    )
                    if len(found) >= max_results:
                        return found
            if budget <= 0:
                break
        return found

    @tool("query_db")
    def query_db(sql: str, limit: _Rows = 100) -> JSONObject:
        """Run one read-only SELECT on the configured database.

        Args:
            sql: A single SELECT (or WITH … SELECT) statement.
            limit: Most rows returned.
        """
        if database_url is None:
            raise PermissionError(
                "no database is open to tools: name one under databases.default in "
                "loopengine.yaml (the store itself never is)"
            )
        statement = sql.strip().rstrip(";").rstrip()
        if not _READ.match(_LEADING_COMMENTS.sub("", statement)):
            raise ValueError("only one SELECT (or WITH … SELECT) statement is allowed")
        columns, rows = read_only_query(
            database_url, lambda _dialect: statement, limit, timeout_s=TOOL_TIMEOUT_S
        )
        return {"columns": columns, "rows": rows, "count": len(rows)}

    @tool("http_get")
    async def http_get(url: str, max_bytes: _ReadSize = _MAX_TEXT) -> JSONObject:
        """Fetch a URL (loopback and private addresses only when allowed in the config).

        Args:
            url: http or https URL.
            max_bytes: Most bytes of the body returned.
        """
        return await _fetch(url, allowed, max_bytes)

    return [
        getattr(fn, ATTRIBUTE) for fn in (list_dir, read_file, search_files, query_db, http_get)
    ]


def offered_tools(
    config: Config,
    base: Path,
    registry: Registry,
    private: Iterable[Path],
    *,
    store: Readable | None = None,
    cluster: Cluster | None = None,
) -> list[ToolDef]:
    """Every tool a model is offered: the sandboxed built-ins, ``search_knowledge`` when the
    config has knowledge collections (read through ``store``), then the plugins' ``@tool``s.
    The file tools never see the ``private`` paths (``Settings.private``: the config, the
    store)."""
    database = config.databases.get("default")
    if database is not None:
        database = _anchored(database, base)
    root = base / config.tools_root
    tools = builtin_tools(root, database, config.http_allow, private=private, base=base)
    if config.knowledge:
        tools.append(knowledge_tool(config, store, cluster))
    return [*tools, *registry.tools]


def _anchored(url: str, base: Path) -> str:
    """A relative SQLite path starts at the config's folder, not the current directory."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url[len(prefix) :].startswith(("/", ":memory:")):
        path = url[len(prefix) :]
        return prefix + str(base / path)
    return url
