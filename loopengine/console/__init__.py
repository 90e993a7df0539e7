"""The web console: server-rendered pages over the same operations as the CLI and the API,
served by ``loopengine daemon`` at ``/`` beside the API, behind a login with the API's token."""

from loopengine.console._console import Console, create_console

__all__ = ["Console", "create_console"]
