"""``knowledge list``, ``index`` and ``search``: the knowledge bases of the config.

``list`` and ``search`` only read the store (``search`` in an event loop: a collection with
``embeddings`` has its query embedded by a node); ``index`` writes, and shows its progress on a
terminal.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from loopengine.app import (
    AwaitedReader,
    KnowledgeBase,
    knowledge_bases,
    read_now,
    read_settings,
    read_store,
)
from loopengine.commands._console import Console
from loopengine.store import iso

__all__ = ["run_knowledge_index", "run_knowledge_list", "run_knowledge_search"]

_NONE = (
    "No knowledge collections: add `knowledge:` to loopengine.yaml "
    "(see `loopengine knowledge --help`)."
)
_PREVIEW = 240


def run_knowledge_list(console: Console, config: Path | None, as_json: bool) -> int:
    settings = read_settings(config)
    with read_store(settings) as reader:
        found = read_now(reader, knowledge_bases(settings.config))
    if as_json:
        console.json({"collections": [base.as_json() for base in found]})
    elif not found:
        console.print(_NONE)
    else:
        rows = [("collection", "files", "chunks", "indexed", "sources")]
        rows += [_row(base) for base in found]
        console.table(rows, (("bold",), (), (), ("dim",), ("dim",)))
    return 0


def _row(base: KnowledgeBase) -> tuple[str, str, str, str, str]:
    chunks = f"{base.chunks:,}" + (f" ({base.vectors:,} embedded)" if base.embeddings else "")
    indexed = iso(base.indexed_at) or "never: loopengine knowledge index"
    return (base.name, f"{base.files:,}", chunks, indexed, ", ".join(base.sources))


async def run_knowledge_index(
    console: Console, name: str | None, config: Path | None, as_json: bool
) -> int:
    from loopengine.knowledge import index
    from loopengine.store import Store

    settings = read_settings(config)
    if not settings.config.knowledge:
        console.print(_NONE)
        return 0
    live = console.interactive and not as_json

    def progress(collection: str, done: int, total: int) -> None:
        console.status(console.style(f"{collection}: {done:,}/{total:,} files", "dim"))

    async with Store.open(settings.database_url) as store:
        try:
            reports = await index(
                store,
                settings.config,
                settings.base,
                [name] if name else [],
                progress=progress if live else None,
            )
        finally:
            if live:
                console.status("")
    if as_json:
        console.json({"collections": [report.as_json() for report in reports]})
        return 0
    for report in reports:
        vectors = f" · {report.embedded:,} embedded" if report.embedded else ""
        console.print(
            f"{console.style(report.collection, 'bold')}  {report.files:,} files: "
            f"{report.changed:,} new or changed, {report.unchanged:,} unchanged, "
            f"{report.removed:,} removed · {report.chunks:,} chunks written{vectors} · "
            f"{report.seconds:.2f} s"
        )
        for skipped in report.skipped:
            console.print(console.style(f"  skipped {skipped}", "yellow"))
        if report.skipped.more:
            console.print(console.style(f"  skipped {report.skipped.more:,} more", "yellow"))
    return 0


async def run_knowledge_search(
    console: Console, name: str, query: str, k: int, config: Path | None, as_json: bool
) -> int:
    from loopengine.knowledge import search

    settings = read_settings(config)
    with read_store(settings) as reader:
        found = await search(AwaitedReader(reader), settings.config, name, query, k)
    if as_json:
        console.json({"results": [chunk.as_json() for chunk in found]})
    elif not found:
        console.print(f"Nothing in {name} matches {query!r}.")
    for rank, chunk in enumerate(() if as_json else found, start=1):
        where = chunk.source + (f"#{chunk.heading}" if chunk.heading else "")
        console.print(
            f"{rank}. {console.style(where, 'bold')}  {console.style(f'{chunk.score:.3f}', 'dim')}"
        )
        preview = textwrap.shorten(chunk.text, _PREVIEW, placeholder=" …")
        console.print(textwrap.indent(textwrap.fill(preview, 96), "   "))
    return 0
