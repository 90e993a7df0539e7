"""``classify_complexity`` (seed 000 §2): one node for simple messages, the chain otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Classification", "classify_complexity"]

LONG = 200
REFLEXIVE_CATEGORIES = frozenset({"code", "archi", "data-analyst", "raisonnement", "reasoning"})
_KEYWORDS = (
    "analyse",
    "analyze",
    "analysis",
    "compare",
    "comparaison",
    "comparison",
    "explique",
    "explain",
    "détaillé",
    "detaille",
    "detailed",
    "en détail",
    "in detail",
    "pourquoi",
    "why",
    "step by step",
    "étape par étape",
    "cherche et",
    "search and",
    "find and",
    "trouve et",
    "évalue",
    "evaluate",
    "review",
    "audit",
    "diagnose",
    "diagnostique",
    "plan",
)
_TOOL_WORDS = (
    "query_db",
    "pipeline",
    "sql",
    "database",
    "base de données",
    "table",
    "fichier",
    "file",
    "folder",
    "dossier",
    "répertoire",
    "directory",
    "read",
    "lis ",
    "liste",
    "list ",
    "url",
    "http",
    "search",
    "cherche",
)
_PARTS = re.compile(
    r"(\?[\s\S]*\?)|(\n\s*[-*\d])|(\bet ensuite\b|\band then\b|\bpuis\b)", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Classification:
    mode: str
    reasons: tuple[str, ...]


def classify_complexity(message: str, category: str | None = None) -> Classification:
    """``simple`` or ``reflexive``, with the reasons that decided it."""
    text = message.strip().lower()
    reasons: list[str] = []
    if category in REFLEXIVE_CATEGORIES:
        reasons.append(f"category '{category}'")
    if len(text) >= LONG:
        reasons.append(f"long message ({len(text)} characters)")
    if _PARTS.search(message):
        reasons.append("several parts")
    if keyword := next((k for k in _KEYWORDS if re.search(rf"\b{re.escape(k)}", text)), None):
        reasons.append(f"keyword '{keyword}'")
    if tool := next((w for w in _TOOL_WORDS if w in text), None):
        reasons.append(f"needs tools ('{tool.strip()}')")
    if reasons:
        return Classification("reflexive", tuple(reasons))
    return Classification("simple", (f"short and plain ({len(text)} characters)",))
