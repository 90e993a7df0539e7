"""What a knowledge collection's name is made of: one rule for the config's check and the knowledge
skills' params, read without loading pydantic."""

from __future__ import annotations

import re

__all__ = ["COLLECTION_NAME", "MAX_COLLECTION_NAME"]

MAX_COLLECTION_NAME = 100
"""Longest knowledge collection name (a word of a command line and of a URL, a key the store
keeps)."""
COLLECTION_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_COLLECTION_NAME - 1}}}")
"""A whole collection name: letters, digits, '_', '-' and '.', the first a letter or digit."""
