"""Skills of the quickstart loop: find stale files in a cache folder and move them to a trash
folder (so a rollback can put them back)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from loopengine import SkillContext, SkillOutput, skill


@skill("scan_cache")
def scan_cache(ctx: SkillContext, folder: str, max_age_days: float = 7) -> SkillOutput:
    """List the files of ``folder`` and those older than ``max_age_days``."""
    root = Path(folder)
    files = [p for p in root.iterdir() if p.is_file()] if root.is_dir() else []
    cutoff = time.time() - max_age_days * 86400
    stale = sorted(p.name for p in files if p.stat().st_mtime < cutoff)
    ctx.logger.info("%d of %d files older than %g days", len(stale), len(files), max_age_days)
    data = {
        "cache": {
            "files": len(files),
            "stale": stale,
            "bytes": sum(p.stat().st_size for p in files),
        }
    }
    return SkillOutput(data=data, confidence=1.0 if root.is_dir() else 0.0)


@skill("trash_file")
def trash_file(ctx: SkillContext, folder: str, item: str, dry_run: bool = False) -> dict[str, Any]:
    """Move one file of ``folder`` into ``folder/.trash``."""
    source, trash = Path(folder) / item, Path(folder) / ".trash"
    if dry_run:
        return {"would_trash": item if source.exists() else None}
    trash.mkdir(exist_ok=True)
    if source.exists():
        shutil.move(source, trash / item)
        ctx.logger.info("moved %s to %s", source, trash)
    return {"trashed": item}


@skill("restore_file")
def restore_file(ctx: SkillContext, folder: str, item: str) -> dict[str, Any]:
    """Put a trashed file back."""
    trashed = Path(folder) / ".trash" / item
    if trashed.exists():
        shutil.move(trashed, Path(folder) / item)
    return {"restored": item}
