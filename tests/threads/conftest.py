"""A conversation's stages call the LLM tests' scripted server."""

from tests.llm.conftest import server

__all__ = ["server"]
