"""The ``loopengine`` command line. Imports stay inside commands so ``--help`` is instant."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from loopengine._startup import start_quickly

if TYPE_CHECKING:
    from loopengine.commands import Console

__all__ = ["main", "run"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


def login_name() -> str | None:
    """Who runs the command, as the environment names them (the chat's user by default); None
    when it does not, or not with a name a user id may have (no space or ``/``)."""
    import getpass

    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment nor an account in passwd
        return None
    return name if name and not any(c.isspace() or c == "/" for c in name) else None


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="config file (default: the nearest loopengine.yaml here or above, "
        "else $LOOPENGINE_CONFIG)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    from loopengine import __version__

    common = _common()
    parser = argparse.ArgumentParser(
        prog="loopengine",
        description="Declarative, self-improving loops: detect → analyze → decide → act → "
        "validate → learn → store.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"loopengine {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    validate = commands.add_parser(
        "validate",
        parents=[common],
        help="check loop files and folders; every error with file:line:col",
    )
    validate.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="loop files or folders"
    )

    schema = commands.add_parser(
        "schema", parents=[common], help="print a JSON Schema (for editors)"
    )
    schema.add_argument("which", nargs="?", choices=("loop", "config"), default="loop")

    commands.add_parser(
        "skills", parents=[common], help="list built-in and plugin skills with their params"
    )
    commands.add_parser("tools", parents=[common], help="list the tools offered to LLMs")
    _runtime_commands(commands, common)
    return parser


def _runtime_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    run = commands.add_parser("run", parents=[common], help="run a loop once now")
    run.add_argument("loop", type=Path, metavar="LOOP.yaml", help="a file, or a shipped loop's id")
    run.add_argument("--input", action="append", default=[], metavar="NAME=VALUE", help="a param")
    run.add_argument("--dry-run", action="store_true", help="run actions with dry_run: true only")
    run.add_argument(
        "--idempotency-key", metavar="KEY", help="a repeated key returns the first run"
    )

    history = commands.add_parser("history", parents=[common], help="past executions, newest first")
    history.add_argument("loop_id", nargs="?", metavar="LOOP_ID")
    history.add_argument("--limit", type=int, default=20, metavar="N")
    history.add_argument("--outcome", metavar="OUTCOME")

    show = commands.add_parser(
        "show", parents=[common], help="one execution: phases, decision, actions"
    )
    show.add_argument("execution_id", metavar="EXECUTION_ID")

    logs = commands.add_parser(
        "logs", parents=[common], help="what an execution's skills logged, oldest first"
    )
    logs.add_argument("execution_id", metavar="EXECUTION_ID")
    logs.add_argument("--after", type=int, default=0, metavar="CURSOR", help="lines after it")
    logs.add_argument("--limit", type=int, default=200, metavar="N", help="lines per read")
    logs.add_argument(
        "-f", "--follow", action="store_true", help="until the execution stops running"
    )

    approvals = commands.add_parser(
        "approvals", parents=[common], help="what waits for approval, oldest first, time left"
    )
    approvals.add_argument("--limit", type=int, default=100, metavar="N")

    for name in ("approve", "reject"):
        answer = commands.add_parser(name, parents=[common], help=f"{name} a waiting execution")
        answer.add_argument("execution_id", metavar="EXECUTION_ID")
        answer.add_argument("--note", metavar="TEXT")

    chat = commands.add_parser("chat", parents=[common], help="one message through reflexive_chat")
    chat.add_argument("message", metavar="MESSAGE")
    chat.add_argument("--session", metavar="ID", help="continue this conversation")
    chat.add_argument(
        "--mode",
        choices=("simple", "reflexive"),
        help="one node, or the whole chain (default: the message's complexity decides)",
    )
    chat.add_argument(
        "--category",
        metavar="NAME",
        help="the routing category (default: the mode when cluster.routing names it, else default)",
    )
    chat.add_argument(
        "--user",
        metavar="USER",
        default=login_name(),
        help="whose memory the chat reads and adds to (default: your login name)",
    )

    resume = commands.add_parser(
        "resume", parents=[common], help="continue an interrupted execution"
    )
    resume.add_argument("execution_id", metavar="EXECUTION_ID")

    flags = commands.add_parser("flags", parents=[common], help="feature flags that gate actions")
    flag_commands = flags.add_subparsers(dest="flags_command", metavar="set|list", required=True)
    flag_set = flag_commands.add_parser("set", parents=[common], help="turn a flag on or off")
    flag_set.add_argument("name", metavar="NAME")
    flag_set.add_argument("state", metavar="on|off")
    flag_commands.add_parser("list", parents=[common], help="list flags")

    metrics = commands.add_parser(
        "metrics", parents=[common], help="metric points for metric sources"
    )
    metric_commands = metrics.add_subparsers(
        dest="metrics_command", metavar="record|list", required=True
    )
    listing = metric_commands.add_parser(
        "list", parents=[common], help="each series: latest value, points, last time"
    )
    listing.add_argument("--name", metavar="GLOB", help="only series whose name matches")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="at most N series")
    learned = commands.add_parser(
        "autolearn", parents=[common], help="what the autolearn loops learned (seed 003)"
    )
    learned.add_argument(
        "what",
        choices=("status", "scores", "history", "memory"),
        help="the loops' state, node scores, changes, what the chat remembers of its users",
    )
    learned.add_argument("--user", metavar="USER", help="memory: only this user")
    record = metric_commands.add_parser("record", parents=[common], help="record one point")
    record.add_argument("name", metavar="NAME")
    record.add_argument("value", metavar="VALUE")
    record.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    _daemon_commands(commands, common)
    _knowledge_commands(commands, common)


_KNOWLEDGE = """\
Knowledge bases are collections of files named in loopengine.yaml:

  knowledge:
    docs:                                  # a collection
      sources: ["kb/**/*.md", "manuals/"]  # folders and globs, relative to the config
      chunk: {size: 800, overlap: 100}     # characters
      embeddings: {node: OL1, model: nomic-embed-text}   # optional: dense retrieval too
      grader: OL1                          # grades what rag.answer retrieves (optional)
      web: {url: "https://search.example/search?format=json"}   # optional: rag.answer's
                                           # fallback, its host under actions.http.allow

Markdown, text, HTML and PDF (with pypdf installed) are cut by heading and paragraph.
`index` is incremental: unchanged files are skipped, changed ones cut again, deleted ones
removed. `search` ranks by BM25 (PostgreSQL: ts_rank), fused with the nearest vectors when the
collection has embeddings. Loops answer from a collection with the skill rag.answer (the
shipped loop knowledge_qa), and the chat with the tool search_knowledge.
"""


def _knowledge_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    knowledge = commands.add_parser(
        "knowledge",
        parents=[common],
        help="knowledge bases for the RAG skills: list, index, search",
        description=_KNOWLEDGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = knowledge.add_subparsers(
        dest="knowledge_command", metavar="list|index|search", required=True
    )
    actions.add_parser(
        "list", parents=[common], help="each collection: files, chunks, when last indexed"
    )
    index = actions.add_parser(
        "index", parents=[common], help="index new and changed files, drop deleted ones"
    )
    index.add_argument("name", nargs="?", metavar="NAME", help="one collection (default: all)")
    search = actions.add_parser(
        "search", parents=[common], help="the chunks of a collection that best match a query"
    )
    search.add_argument("name", metavar="NAME", help="the collection")
    search.add_argument("query", metavar="QUERY", help="words to look for")
    search.add_argument("--k", type=int, default=5, metavar="N", help="chunks shown (default 5)")


def _daemon_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    daemon = commands.add_parser(
        "daemon", parents=[common], help="fire triggered loops until SIGINT/SIGTERM"
    )
    daemon.add_argument(
        "folder", nargs="?", type=Path, metavar="LOOPS_DIR", help="default: daemon.loops"
    )
    trigger = commands.add_parser("trigger", parents=[common], help="queue a manual job")
    trigger.add_argument("loop", metavar="LOOP_ID", help="a loop id in daemon.loops, or a file")
    trigger.add_argument(
        "--input", action="append", default=[], metavar="NAME=VALUE", help="a param"
    )
    trigger.add_argument("--wait", action="store_true", help="wait for the outcome, exit as run")
    trigger.add_argument("--dry-run", action="store_true", help="run actions with dry_run: true")
    emit = commands.add_parser("emit", parents=[common], help="append an event to the log")
    emit.add_argument("name", metavar="EVENT")
    emit.add_argument("--data", metavar="JSON", help="the event's data")
    plan = commands.add_parser(
        "plan", parents=[common], help="a loop's next fire instants, DST decisions included"
    )
    plan.add_argument("loop", metavar="LOOP", help="a loop file, or a loop id in daemon.loops")
    plan.add_argument("--from", dest="start", metavar="T", help="ISO time (default: now)")
    plan.add_argument("--to", dest="end", metavar="T", help="ISO time")
    plan.add_argument("--count", type=int, metavar="N", help="at most N fires (default 10)")
    commands.add_parser(
        "status", parents=[common], help="daemons, loops with next fire, running, queue depth"
    )
    for name, verb in (("pause", "stop"), ("unpause", "restart")):
        pause = commands.add_parser(name, parents=[common], help=f"{verb} a loop's triggers")
        pause.add_argument("loop_id", metavar="LOOP_ID")
    events = commands.add_parser("events", parents=[common], help="the event log")
    event_commands = events.add_subparsers(dest="events_command", metavar="list", required=True)
    listing = event_commands.add_parser("list", parents=[common], help="newest events first")
    listing.add_argument("--name", metavar="GLOB", help="only events whose name matches")
    listing.add_argument("--limit", type=int, default=20, metavar="N", help="at most N events")


def _daemon_call(args: argparse.Namespace, console: Console) -> Any:
    """The call of a daemon-side command (daemon, trigger, emit, plan, status, pause…)."""
    config: Path | None = getattr(args, "config", None)
    as_json: bool = getattr(args, "json", False)
    command = args.command
    if command in ("daemon", "status"):
        from loopengine.commands import daemon

        if command == "status":
            return partial(daemon.run_status, console, config, as_json)
        return partial(daemon.run_daemon_command, console, args.folder, config, as_json)
    if command == "plan":
        from loopengine.commands import plan

        return partial(
            plan.run_plan, console, args.loop, args.start, args.end, args.count, config, as_json
        )
    if command in ("emit", "events"):
        from loopengine.commands import events

        if command == "emit":
            return partial(events.run_emit, console, args.name, args.data, config, as_json)
        return partial(events.run_events_list, console, args.name, args.limit, config, as_json)
    from loopengine.commands import control

    if command == "trigger":
        given = (args.loop, args.input, args.wait, config, as_json, args.dry_run)
        return partial(control.run_trigger, console, *given)
    pause = command == "pause"
    return partial(control.run_pause, console, args.loop_id, pause, config, as_json)


_DAEMON_COMMANDS = frozenset(
    {"daemon", "trigger", "emit", "plan", "status", "pause", "unpause", "events"}
)


def _runtime_call(args: argparse.Namespace, console: Console) -> Any:
    """The call of a run-time command (a coroutine, or a plain function for those that only
    read or add one row); only that command's module is imported."""
    config: Path | None = getattr(args, "config", None)
    as_json: bool = getattr(args, "json", False)
    command = args.command
    if command in _DAEMON_COMMANDS:
        return _daemon_call(args, console)
    if command == "run":
        from loopengine.commands import run

        return partial(
            run.run_loop,
            console,
            args.loop,
            args.input,
            config=config,
            dry_run=args.dry_run,
            idempotency_key=args.idempotency_key,
            as_json=as_json,
        )
    if command == "chat":
        from loopengine.commands import chat

        given = (args.message, args.session, config, as_json, args.mode, args.user)
        return partial(chat.run_chat, console, *given, category=args.category)
    if command in ("history", "show", "logs"):
        from loopengine.commands import history

        if command == "show":
            return partial(history.run_show, console, args.execution_id, config, as_json)
        if command == "logs":
            return partial(
                history.run_logs,
                console,
                args.execution_id,
                args.after,
                args.limit,
                args.follow,
                config,
                as_json,
            )
        return partial(
            history.run_history, console, args.loop_id, args.limit, args.outcome, config, as_json
        )
    if command == "approvals":
        from loopengine.commands import approvals

        return partial(approvals.run_approvals, console, args.limit, config, as_json)
    if command in ("approve", "reject", "resume"):
        from loopengine.commands import executions

        if command == "resume":
            return partial(executions.run_resume, console, args.execution_id, config, as_json)
        approve = command == "approve"
        return partial(
            executions.run_answer, console, args.execution_id, approve, args.note, config, as_json
        )
    if command == "knowledge":
        from loopengine.commands import knowledge

        if args.knowledge_command == "list":
            return partial(knowledge.run_knowledge_list, console, config, as_json)
        if args.knowledge_command == "index":
            return partial(knowledge.run_knowledge_index, console, args.name, config, as_json)
        return partial(
            knowledge.run_knowledge_search, console, args.name, args.query, args.k, config, as_json
        )
    if command == "autolearn":
        from loopengine.commands import autolearn

        return partial(autolearn.run_autolearn, console, args.what, config, as_json, args.user)
    if command == "metrics":
        from loopengine.commands import metrics

        if args.metrics_command == "record":
            point = (args.name, args.value, args.label, config, as_json)
            return partial(metrics.run_metric, console, *point)
        return partial(metrics.run_metrics_list, console, args.name, args.limit, config, as_json)
    from loopengine.commands import admin

    if args.flags_command == "set":
        return partial(admin.run_flags_set, console, args.name, args.state, config, as_json)
    return partial(admin.run_flags_list, console, config, as_json)


def _dispatch(args: argparse.Namespace, console: Console) -> int:
    config: Path | None = getattr(args, "config", None)
    as_json: bool = getattr(args, "json", False)
    if args.command == "validate":
        from loopengine.commands.validate import run_validate

        return run_validate(console, args.paths, config, as_json)
    if args.command in ("schema", "skills", "tools"):
        from loopengine.commands import catalog

        if args.command == "schema":
            return catalog.run_schema(console, args.which)
        if args.command == "skills":
            return catalog.run_skills(console, config, as_json)
        return catalog.run_tools(console, config, as_json)
    import inspect  # loaded by then (dataclasses needs it): free here, ~9 ms for --help

    call = _runtime_call(args, console)
    if not inspect.iscoroutinefunction(call.func):  # it reads, or adds a row: no event loop
        return int(call())
    import anyio

    code: int = anyio.run(call)
    return code


def _report(console: Console, error: Exception) -> int:
    from loopengine.errors import ContractError

    diagnostics = getattr(error, "diagnostics", ())
    if diagnostics:
        for diagnostic in diagnostics:
            console.problem(diagnostic.format())
    else:
        console.problem(f"{console.style('error:', 'red', 'bold')} {error}")
    return EXIT_USAGE if isinstance(error, ContractError) else EXIT_FAILED


def _mask_secrets_in_logs(debug: bool) -> None:
    """Whatever logger a skill or plugin uses, the records this process prints have secrets
    masked; ``--debug`` prints DEBUG records too (skills' tracebacks, the engine's notes)."""
    import logging

    from loopengine._secrets import SecretFilter

    if debug:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    handlers = [*logging.getLogger().handlers, logging.lastResort]
    for handler in handlers:
        if handler is not None:
            handler.addFilter(SecretFilter())


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (0 ok, 1 failed, 2 bad input, 70 internal error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from loopengine.commands import Console
    from loopengine.errors import LoopEngineError

    console = Console()
    debug = getattr(args, "debug", False)
    _mask_secrets_in_logs(debug)
    try:
        return _dispatch(args, console)
    except LoopEngineError as exc:
        if debug:
            raise
        return _report(console, exc)
    except KeyboardInterrupt:
        console.problem("interrupted")
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        if debug:
            raise
        console.problem(
            f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)"
        )
        return EXIT_INTERNAL


def run() -> NoReturn:
    """The ``loopengine`` command: ``main``, then exit without tearing the interpreter down.

    By then every output is flushed and the store closed; finalising the ~300 modules a run-time
    command loads would only cost ~0.1 s more. ``atexit`` handlers still run.
    """
    start_quickly()
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
