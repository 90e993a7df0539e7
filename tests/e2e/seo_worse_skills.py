"""The seed example's skills, except a fix that makes things worse (to exercise auto-rollback)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

from loopengine import SkillContext, skill

_spec = importlib.util.spec_from_file_location("seo_skills_for_worse", os.environ["SEO_SKILLS"])
assert _spec is not None
assert _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)

seo_role_audit = _example.seo_role_audit
canonical_check = _example.canonical_check
seo_role_rollback = _example.seo_role_rollback


@skill("seo_role_fix")
def seo_role_fix(ctx: SkillContext, dry_run: bool = False) -> dict[str, Any]:
    """Break every page, each call reporting one more violation than before it."""
    site = Path(os.environ["SEO_SITE"])
    data = json.loads(site.read_text())
    before = sum(1 for p in data["pages"] if p["role"] != p["expected_role"])
    if dry_run:
        return {"dry_run": {"would_fix": before}}
    if not site.with_suffix(".bak").exists():
        shutil.copyfile(site, site.with_suffix(".bak"))
    for page in data["pages"]:
        page["role"] = "broken"
    site.write_text(json.dumps(data, indent=2))
    return {"violations": {"before": before, "after": before + 1}}
