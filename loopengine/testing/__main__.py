"""``python -m loopengine.testing [SCRIPT.json] [--echo] [--port N]``: the scripted
OpenAI-compatible server, until Ctrl-C (or SIGTERM), so a chat config can be tried without a
model: point a node's ``base_url`` at the URL it prints."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from loopengine.errors import ContractError
from loopengine.testing import ANY_MODEL, FakeLLMServer, echo
from loopengine.testing._script import read_script


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m loopengine.testing",
        description="A scripted OpenAI-compatible server on 127.0.0.1, until Ctrl-C.",
    )
    parser.add_argument("script", nargs="?", type=Path, help="JSON: what each model answers")
    parser.add_argument(
        "--echo", action="store_true", help="models without a script answer the user's message"
    )
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    arguments = parser.parse_args(argv)
    if arguments.script is None and not arguments.echo:
        parser.error("give a script file, --echo, or both")
    if not 0 <= arguments.port <= 65535:
        parser.error(f"--port {arguments.port} is no port (0 to 65535)")
    return arguments


def _answers(models: list[str], echoing: bool) -> str:
    """Who answers what, in a few words."""
    scripted = [model for model in models if model != ANY_MODEL]
    said = [f"scripted: {', '.join(scripted)}"] if scripted else []
    if ANY_MODEL in models:
        said.append(f"{'any other' if scripted else 'every'} model: as scripted for *")
    elif echoing:
        said.append(f"{'any other' if scripted else 'every'} model echoes the last user message")
    return "; ".join(said)


def _serve(server: FakeLLMServer, answers: str) -> None:
    """Serve until Ctrl-C or SIGTERM."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with server:
        said = f"Scripted OpenAI-compatible server on {server.base_url} ({answers})"
        print(f"{said}; Ctrl-C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Serve as the arguments say; 2 on a bad script file or a port that is taken."""
    arguments = _arguments(argv)
    try:
        scripts = read_script(arguments.script) if arguments.script else {}
        server = FakeLLMServer(arguments.port)
    except ContractError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: port {arguments.port} cannot be used: {exc.strerror}", file=sys.stderr)
        return 2
    for model, script in scripts.items():
        server.script(model, script)
    if arguments.echo and ANY_MODEL not in scripts:
        server.script(ANY_MODEL, echo())
    _serve(server, _answers(list(scripts), arguments.echo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
