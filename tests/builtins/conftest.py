"""A scripted LLM server on 127.0.0.1 for the LLM skills' tests (``server``, unless a module
serves something else under that name)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopengine.testing import FakeLLMServer


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running
