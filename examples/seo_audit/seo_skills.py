"""Skills of the seed's seo_audit_loop, working on a small site kept in ``site.json``.

Each page has a ``role`` and the ``expected_role`` its URL implies; a page whose role differs is
an ``error`` violation, a page with no canonical URL a ``warning``. ``SEO_SITE`` overrides the
file used.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from loopengine import SkillContext, skill

HERE = Path(__file__).resolve().parent


def _site() -> Path:
    return Path(os.environ.get("SEO_SITE", HERE / "site.json"))


def _pages() -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = json.loads(_site().read_text())["pages"]
    return pages


def _role_violations(pages: list[dict[str, Any]]) -> list[str]:
    return [page["url"] for page in pages if page.get("role") != page.get("expected_role")]


@skill("seo_role_audit")
def seo_role_audit(ctx: SkillContext, check_content: bool = True) -> dict[str, Any]:
    """Count pages whose role does not match their URL, by severity."""
    pages = _pages()
    errors = _role_violations(pages)
    thin = [p["url"] for p in pages if check_content and len(p.get("content", "")) < 20]
    return {
        "violations": {
            "critical": {"count": 0},
            "error": {"count": len(errors), "urls": errors},
            "warning": {"count": len(thin), "urls": thin},
            "count": len(errors) + len(thin),
            "before": len(errors),
        },
        "confidence": 0.95,
    }


@skill("canonical_check")
def canonical_check(ctx: SkillContext) -> dict[str, Any]:
    """List pages without a canonical URL."""
    missing = [page["url"] for page in _pages() if not page.get("canonical")]
    return {"canonicals": {"missing": missing, "count": len(missing)}}


@skill("seo_role_fix")
def seo_role_fix(ctx: SkillContext, dry_run: bool = False) -> dict[str, Any]:
    """Set each page's role to the one its URL implies (a backup is kept for rollback)."""
    site = _site()
    data = json.loads(site.read_text())
    before = len(_role_violations(data["pages"]))
    if dry_run:
        return {"dry_run": {"would_fix": before}}
    shutil.copyfile(site, site.with_suffix(".bak"))
    for page in data["pages"]:
        page["role"] = page["expected_role"]
    site.write_text(json.dumps(data, indent=2))
    return {"violations": {"before": before, "after": len(_role_violations(data["pages"]))}}


@skill("seo_role_rollback")
def seo_role_rollback(ctx: SkillContext) -> dict[str, Any]:
    """Restore the site as it was before the last fix."""
    site = _site()
    backup = site.with_suffix(".bak")
    if not backup.exists():
        return {"restored": False}
    shutil.move(backup, site)
    return {"restored": True}
