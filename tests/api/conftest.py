"""The API is served by ``loopengine daemon``: its tests run daemons on the daemon tests' folder
of loops."""

from tests.daemon.conftest import workspace

__all__ = ["workspace"]
