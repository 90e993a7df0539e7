"""The composition every face runs on: settings, workspace (registry and plugins), runtime (store
and engine), the reader of the commands that only read, one chat message, and a trigger firing
as the queue takes it (``Firing``: the daemon's triggers and ``loopengine trigger`` alike).

Names load with their module on first use, so a command that only reads imports no engine.
"""

from typing import TYPE_CHECKING

from loopengine._lazy import lazy_exports

if TYPE_CHECKING:
    from loopengine.app._chat import CHAT_LOOP, ChatAnswer, Mode, chat, chat_loop
    from loopengine.app._intake import Firing
    from loopengine.app._reader import open_reader, read_store
    from loopengine.app._runtime import Runtime, listening, open_runtime
    from loopengine.app._settings import (
        CONFIG_ENV,
        CONFIG_NAME,
        DATABASE_ENV,
        Settings,
        find_config,
        private_paths,
        read_settings,
    )
    from loopengine.app._workspace import Workspace, load_workspace

_EXPORTS = {
    "CHAT_LOOP": "loopengine.app._chat",
    "ChatAnswer": "loopengine.app._chat",
    "Mode": "loopengine.app._chat",
    "chat": "loopengine.app._chat",
    "chat_loop": "loopengine.app._chat",
    "Firing": "loopengine.app._intake",
    "open_reader": "loopengine.app._reader",
    "read_store": "loopengine.app._reader",
    "Runtime": "loopengine.app._runtime",
    "listening": "loopengine.app._runtime",
    "open_runtime": "loopengine.app._runtime",
    "CONFIG_ENV": "loopengine.app._settings",
    "CONFIG_NAME": "loopengine.app._settings",
    "DATABASE_ENV": "loopengine.app._settings",
    "Settings": "loopengine.app._settings",
    "find_config": "loopengine.app._settings",
    "private_paths": "loopengine.app._settings",
    "read_settings": "loopengine.app._settings",
    "Workspace": "loopengine.app._workspace",
    "load_workspace": "loopengine.app._workspace",
}

__all__ = [
    "CHAT_LOOP",
    "CONFIG_ENV",
    "CONFIG_NAME",
    "DATABASE_ENV",
    "ChatAnswer",
    "Firing",
    "Mode",
    "Runtime",
    "Settings",
    "Workspace",
    "chat",
    "chat_loop",
    "find_config",
    "listening",
    "load_workspace",
    "open_reader",
    "open_runtime",
    "private_paths",
    "read_settings",
    "read_store",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
