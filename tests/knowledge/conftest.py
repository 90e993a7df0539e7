"""A workspace with a knowledge collection: its files under ``kb/`` and its config."""

from __future__ import annotations

from pathlib import Path

from loopengine.contract import Config


def write(base: Path, files: dict[str, str]) -> None:
    """Write ``files`` (name → text) under ``base``."""
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


def config(**collection: object) -> Config:
    """A config with the collection ``docs`` of ``kb/`` (``collection`` adds to it)."""
    return Config.model_validate({"knowledge": {"docs": {"sources": ["kb"], **collection}}})


GUIDE = {
    "kb/install.md": "# Install\n\nRun the installer, then restart the daemon.\n\n"
    "## Linux\n\nUse apt to install the package on Debian.\n",
    "kb/usage.md": "# Usage\n\nCall the command with a loop file.\n",
    "kb/faq.txt": "Why is the sky blue?\n\nRayleigh scattering of sunlight.\n",
}
