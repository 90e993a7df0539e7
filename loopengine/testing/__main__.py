"""``python -m loopengine.testing [SCRIPT.json] [--echo] [--port N]``: the scripted
OpenAI-compatible server, until Ctrl-C (or SIGTERM), so a chat config can be tried without a
model: point a node's ``base_url`` at the URL it prints. ``--receive [--secret S]``: a webhook
receiver instead, printing each delivery, so a loop's ``webhook.send`` can be tried."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from loopengine.errors import ContractError, TriggerError
from loopengine.testing import ANY_MODEL, FakeLLMServer, WebhookReceiver, echo
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
    parser.add_argument(
        "--receive", action="store_true", help="receive webhooks instead: print each delivery"
    )
    parser.add_argument("--secret", help="with --receive: check Standard Webhooks signatures")
    arguments = parser.parse_args(argv)
    if arguments.receive and (arguments.script is not None or arguments.echo):
        parser.error("--receive serves no model: give it without a script file or --echo")
    if arguments.secret is not None and not arguments.receive:
        parser.error("--secret checks the deliveries --receive gets: give both")
    if arguments.script is None and not arguments.echo and not arguments.receive:
        parser.error("give a script file, --echo, or both (or --receive)")
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


def _serve(server: FakeLLMServer | WebhookReceiver, said: str) -> None:
    """Serve until Ctrl-C or SIGTERM."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with server:
        print(f"{said}; Ctrl-C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped", flush=True)


def _receive(port: int, secret: str | None) -> int:
    """Receive webhooks, each delivery printed on a line; 2 on a bad secret or a taken port."""
    try:
        receiver = WebhookReceiver(port, secret, lambda d: print(d.line(), flush=True))
    except TriggerError as exc:
        print(f"error: --secret: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: port {port} cannot be used: {exc.strerror}", file=sys.stderr)
        return 2
    checks = "checks Standard Webhooks signatures" if secret else "signatures not checked"
    _serve(receiver, f"Webhook receiver on {receiver.url} ({checks})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Serve as the arguments say; 2 on a bad script file or a port that is taken."""
    arguments = _arguments(argv)
    if arguments.receive:
        return _receive(arguments.port, arguments.secret)
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
    answers = _answers(list(scripts), arguments.echo)
    _serve(server, f"Scripted OpenAI-compatible server on {server.base_url} ({answers})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
