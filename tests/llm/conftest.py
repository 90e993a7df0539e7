"""A scripted OpenAI-compatible server for the LLM tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopengine.testing import FakeLLMServer


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running
