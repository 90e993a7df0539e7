"""Tools offered to models: ``@tool`` functions and the sandboxed built-ins, run with validated
arguments. Every failure (unknown tool, bad arguments, exception) is a result the model reads."""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import httpx
from pydantic import ValidationError

from loopengine._suggestions import did_you_mean
from loopengine.contract import Config
from loopengine.skills import ATTRIBUTE, Registry, ToolDef, tool
from loopengine.store import read_only_query

__all__ = ["ToolOutcome", "Toolbox", "builtin_tools", "offered_tools"]

_MAX_TEXT = 65_536


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a call gave: ``result`` when ``ok``, else ``error`` (both fed back to the model)."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0

    def content(self) -> str:
        """The tool message content: JSON of the result, or of the error."""
        body = {"result": self.result} if self.ok else {"error": self.error}
        return json.dumps(body, ensure_ascii=False, default=str)

    def as_dict(self) -> dict[str, Any]:
        entry = {
            "name": self.name,
            "args": self.arguments,
            "ok": self.ok,
            "duration_ms": round(self.duration_ms, 3),
        }
        entry["result" if self.ok else "error"] = self.result if self.ok else self.error
        return entry


class _Sandbox:
    """The file system seen by the file tools: nothing outside ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def path(self, relative: str) -> Path:
        candidate = (self.root / relative).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            raise PermissionError(f"{relative!r} is outside the tools root")
        return candidate


def _is_private(host: str, allowed: frozenset[str]) -> bool:
    if host in allowed:
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        raise ValueError(f"cannot resolve {host!r}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if str(address) in allowed:
            continue
        if (
            address.is_loopback
            or address.is_private
            or address.is_link_local
            or address.is_reserved
        ):
            return True
    return False


def builtin_tools(root: Path, database_url: str, http_allow: Iterable[str] = ()) -> list[ToolDef]:
    """``list_dir``, ``read_file``, ``search_files``, ``query_db`` and ``http_get``, sandboxed."""
    sandbox = _Sandbox(root)
    allowed = frozenset(http_allow)

    @tool("list_dir")
    def list_dir(path: str = ".") -> list[dict[str, Any]]:
        """List a folder of the workspace.

        Args:
            path: Folder, relative to the workspace root.
        """
        folder = sandbox.path(path)
        return [
            {
                "name": entry.name,
                "type": "dir" if entry.is_dir() else "file",
                "size": entry.stat().st_size if entry.is_file() else None,
            }
            for entry in sorted(folder.iterdir())
        ]

    @tool("read_file")
    def read_file(path: str, max_bytes: int = _MAX_TEXT) -> dict[str, Any]:
        """Read a text file of the workspace.

        Args:
            path: File, relative to the workspace root.
            max_bytes: Most bytes returned.
        """
        target = sandbox.path(path)
        data = target.read_bytes()
        return {
            "path": path,
            "text": data[:max_bytes].decode("utf-8", "replace"),
            "truncated": len(data) > max_bytes,
        }

    @tool("search_files")
    def search_files(pattern: str, path: str = ".", max_results: int = 50) -> list[dict[str, Any]]:
        """Find lines matching a regular expression in the workspace's text files.

        Args:
            pattern: Regular expression (case-insensitive).
            path: Folder to search, relative to the workspace root.
            max_results: Most matching lines returned.
        """
        expression = re.compile(pattern, re.IGNORECASE)
        found: list[dict[str, Any]] = []
        for file in sorted(sandbox.path(path).rglob("*")):
            if not file.is_file() or any(
                part.startswith(".") for part in file.relative_to(sandbox.root).parts
            ):
                continue
            for number, line in enumerate(file.read_text("utf-8", "replace").splitlines(), 1):
                if expression.search(line):
                    found.append(
                        {
                            "file": str(file.relative_to(sandbox.root)),
                            "line": number,
                            "text": line[:300],
                        }
                    )
                    if len(found) >= max_results:
                        return found
        return found

    @tool("query_db")
    def query_db(sql: str, limit: int = 100) -> dict[str, Any]:
        """Run one read-only SELECT on the configured database.

        Args:
            sql: A single SELECT (or WITH … SELECT) statement.
            limit: Most rows returned.
        """
        statement = sql.strip().rstrip(";")
        if ";" in statement or not re.match(r"(?is)^\s*(select|with)\b", statement):
            raise ValueError("only one SELECT statement is allowed")
        columns, rows = read_only_query(database_url, lambda _dialect: statement, limit)
        return {"columns": columns, "rows": rows, "count": len(rows)}

    @tool("http_get")
    async def http_get(url: str, max_bytes: int = _MAX_TEXT) -> dict[str, Any]:
        """Fetch a URL (loopback and private addresses only when allowed in the config).

        Args:
            url: http or https URL.
            max_bytes: Most bytes of the body returned.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("only http and https URLs are allowed")
        private = await anyio.to_thread.run_sync(_is_private, parts.hostname, allowed)
        if private:
            raise PermissionError(
                f"{parts.hostname} is a loopback or private address (allow it with http_allow)"
            )
        async with httpx.AsyncClient(follow_redirects=False, timeout=10) as client:
            response = await client.get(url)
        return {
            "status": response.status_code,
            "content_type": response.headers.get("content-type"),
            "text": response.text[:max_bytes],
        }

    return [
        getattr(fn, ATTRIBUTE) for fn in (list_dir, read_file, search_files, query_db, http_get)
    ]


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            problems.append(f"missing required argument '{where}'")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


class Toolbox:
    """The tools a stage may call, by name."""

    def __init__(self, tools: Iterable[ToolDef]) -> None:
        self.tools = {definition.name: definition for definition in tools}
        self._specs = {
            d.name: {
                "type": "function",
                "function": {
                    "name": d.name,
                    "description": d.description,
                    "parameters": d.json_schema(),
                },
            }
            for d in self.tools.values()
        }

    def specs(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI ``tools`` for ``names`` (all when None); the schemas are built once."""
        if names is None:
            return list(self._specs.values())
        return [self._specs[name] for name in names if name in self._specs]

    async def run(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Run one call; never raises: failures come back as an error outcome."""
        started = time.perf_counter()
        args = dict(arguments)

        def failed(error: str) -> ToolOutcome:
            return ToolOutcome(
                name, args, False, error=error, duration_ms=(time.perf_counter() - started) * 1000
            )

        definition = self.tools.get(name)
        if definition is None:
            known = ", ".join(sorted(self.tools))
            return failed(
                f"unknown tool '{name}'{did_you_mean(name, self.tools)}; available tools: {known}"
            )
        try:
            model = definition.params.model_validate(args)
        except ValidationError as exc:
            return failed(f"invalid arguments for {name}: {_validation_message(exc)}")
        values = {field: getattr(model, field) for field in type(model).model_fields}
        try:
            if definition.is_async:
                result = await definition.fn(**values)
            else:
                result = await anyio.to_thread.run_sync(partial(definition.fn, **values))
        except Exception as exc:
            return failed(f"{type(exc).__name__}: {exc}")
        return ToolOutcome(
            name, args, True, result=result, duration_ms=(time.perf_counter() - started) * 1000
        )


def offered_tools(config: Config, base: Path, registry: Registry) -> list[ToolDef]:
    """Every tool a model is offered: the sandboxed built-ins, then the plugins' ``@tool``s."""
    database = config.databases.get("default") or config.database
    return [*builtin_tools(base / config.tools_root, database, config.http_allow), *registry.tools]
