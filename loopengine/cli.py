"""The ``loopengine`` command line. Imports stay inside commands so ``--help`` is instant."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopengine.console import Console

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="config file (default: $LOOPENGINE_CONFIG, else ./loopengine.yaml)",
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
    return parser


def _dispatch(args: argparse.Namespace, console: Console) -> int:
    config: Path | None = getattr(args, "config", None)
    as_json: bool = getattr(args, "json", False)
    if args.command == "validate":
        from loopengine.commands.validate import run_validate

        return run_validate(console, args.paths, config, as_json)
    from loopengine.commands import catalog

    if args.command == "schema":
        return catalog.run_schema(console, args.which)
    if args.command == "skills":
        return catalog.run_skills(console, config, as_json)
    return catalog.run_tools(console, config, as_json)


def _report(console: Console, error: Exception) -> int:
    from loopengine.errors import ContractError

    diagnostics = getattr(error, "diagnostics", ())
    if diagnostics:
        for diagnostic in diagnostics:
            console.problem(diagnostic.format())
    else:
        console.problem(f"{console.style('error:', 'red', 'bold')} {error}")
    return EXIT_USAGE if isinstance(error, ContractError) else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (0 ok, 1 failed, 2 bad input, 70 internal error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from loopengine.console import Console
    from loopengine.errors import LoopEngineError

    console = Console()
    debug = getattr(args, "debug", False)
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
