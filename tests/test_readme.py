"""The README is a test: each section's ``console`` blocks run as written, in a terminal, in a
fresh copy of the shipped examples, and print what the README shows.

Outputs are compared line by line (blank lines aside) with whitespace runs collapsed; times, durations (lateness too) and daemon
names are normalised; an execution or session id shown in the README stands for the one the run
printed, and later commands of the section use that one. ``…`` inside a line matches any text, a
line ``...`` any number of lines. ``$ loopengine daemon`` and ``$ python -m loopengine.testing``
start in the background: the README shows the first lines they print, and the section's later
blocks run against them (read-only commands are retried until they show it, as a person would
look again). ``<!-- test: cluster -->``
(``api cluster``) in a section starts scripted LLM nodes in place of those the chat config
(the API example's config) names; a code block under ``<!-- file: PATH -->`` must be that file;
``<!-- test: free-port 8787 -->`` skips it where the port its daemon listens on is taken (and
``free-port 11434``, the scripted server's; ``8788``, the webhook receiver's; ``8789``, where
the uptime check finds no site; ``8790``, the knowledge example's scripted server).
"""

from __future__ import annotations

import os
import pty
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopengine.testing import FakeLLMServer, reply, tool_call
from tests.conftest import ROOT
from tests.waiting import DEADLINE_S

README = ROOT / "README.md"
COMMAND_TIMEOUT_S = 60.0
SETTLE_S = DEADLINE_S
"""How long a read-only command against a running daemon is retried until it shows the README's
output (the daemon works asynchronously; a person reads the output seconds later): generous, for
a loaded machine."""
READ_ONLY = ("loopengine history", "loopengine status", "loopengine events", "loopengine show")
BACKGROUND = ("loopengine daemon", "python -m loopengine.testing")
"""Commands that run until stopped: started in the background, stopped with the section."""


@dataclass(frozen=True)
class Command:
    block: int
    line: int
    text: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    title: str
    commands: tuple[Command, ...]
    fixtures: frozenset[str]


def sections(markdown: str) -> list[Section]:
    """The README's ``###`` sections that hold ``console`` blocks, with their commands."""
    found: list[Section] = []
    title, commands, fixtures = "", [], set[str]()
    lines = markdown.splitlines()
    index = 0

    def close() -> None:
        if commands:
            found.append(Section(title, tuple(commands), frozenset(fixtures)))

    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            close()
            title, commands, fixtures = line.lstrip("# "), [], set()
        elif marker := re.fullmatch(r"<!-- test: ([\w -]+) -->", line.strip()):
            fixtures.add(marker[1])
        elif line.strip() == "```console":
            block, index = index + 1, index + 1
            while lines[index].strip() != "```":
                if not lines[index].startswith("$ "):
                    raise AssertionError(f"README.md:{index + 1}: output before any command")
                start, text = index + 1, lines[index][2:]
                index += 1
                output = []
                while not lines[index].startswith("$ ") and lines[index].strip() != "```":
                    output.append(lines[index])
                    index += 1
                commands.append(Command(block, start, text, tuple(output)))
        index += 1
    close()
    return found


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
NORMALISED = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)? ms\b"), "<ms>"),
    (re.compile(r"(?<![\w.])\d+\.\d(?![\w.])"), "<ms>"),
    (re.compile(r"(<time>) \d+$"), r"\1 <ms>"),
    (re.compile(r"\b[\w.-]+:\d+:[0-9a-f]{8}\b"), "<daemon>"),
    (re.compile(r"\blate_s=\d+(?:\.\d+)?"), "late_s=<s>"),
    (re.compile(r"\b\d+[dhms](?: \d+[hm])? left\b"), "<time left>"),
)
ID = re.compile(r"\b[0-9a-f]{32}\b")


def normalise(line: str) -> str:
    line = " ".join(ANSI.sub("", line).split())
    for pattern, replacement in NORMALISED:
        line = pattern.sub(replacement, line)
    return line


def match_output(expected: tuple[str, ...], actual: str, ids: dict[str, str]) -> bool:
    """Whether ``actual`` prints what ``expected`` shows; the ids it binds go into ``ids``."""
    groups: dict[str, str] = {}
    parts = []
    for line in filter(str.strip, expected):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = []
        for piece in normalise(line).split("…"):
            pattern, last = [], 0
            for found in ID.finditer(piece):
                pattern.append(re.escape(piece[last : found.start()]))
                known = found[0]
                if known in ids:
                    pattern.append(re.escape(ids[known]))
                elif known in groups:
                    pattern.append(f"(?P={groups[known]})")
                else:
                    groups[known] = f"id{len(groups)}"
                    pattern.append(f"(?P<{groups[known]}>[0-9a-f]{{32}})")
                last = found.end()
            pattern.append(re.escape(piece[last:]))
            pieces.append("".join(pattern))
        parts.append(".*?".join(pieces) + r"\n")
    text = "".join(normalise(line) + "\n" for line in actual.splitlines() if line.strip())
    found = re.fullmatch("".join(parts), text)
    if found is None:
        return False
    ids.update({known: found[name] for known, name in groups.items()})
    return True


def in_terminal(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``command`` with a pseudo-terminal as its stdin, stdout and stderr, as a person would."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the command and its children are done
                break
            if not data:
                break
            chunks.append(data)
        else:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"{command!r} still runs after {COMMAND_TIMEOUT_S:.0f} s")
    finally:
        os.close(leader)
    code = process.wait(timeout=COMMAND_TIMEOUT_S)
    return code, b"".join(chunks).decode("utf-8", "replace").replace("\r", "")


class Background:
    """A long-running command (the daemon, the scripted server) whose output is read line by
    line as it comes."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str]) -> None:
        self.command = command
        self.process = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def first_lines(self, count: int, timeout_s: float) -> str:
        taken: list[str] = []
        deadline = time.monotonic() + timeout_s
        while len(taken) < count and (left := deadline - time.monotonic()) > 0:
            try:
                taken.append(self.lines.get(timeout=left))
            except queue.Empty:
                break
        return "".join(taken)

    def stop(self) -> int:
        """SIGTERM, as a person's Ctrl-C or a service manager would; the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise AssertionError(f"{self.command!r} did not stop on SIGTERM") from None
        finally:
            assert self.process.stdout is not None
            self.process.stdout.close()


@dataclass
class Session:
    """One section of the README, each block a new terminal at the repository's root (its own
    folder and environment) on one machine: what runs in the background, the ids seen so far."""

    root: Path
    base_env: dict[str, str]
    cwd: Path = field(init=False)
    env: dict[str, str] = field(init=False)
    block: int = -1
    ids: dict[str, str] = field(default_factory=dict)
    background: list[Background] = field(default_factory=list)

    def run(self, command: Command) -> None:
        if command.block != self.block:
            self.block, self.cwd, self.env = command.block, self.root, dict(self.base_env)
        text = command.text
        for shown, printed in self.ids.items():
            text = text.replace(shown, printed)
        where = f"README.md:{command.line}: $ {command.text}"
        if text.startswith("cd "):
            self.cwd = (self.cwd / text[3:].strip()).resolve()
            assert self.cwd.is_dir(), f"{where}: no folder {self.cwd}"
        elif text.startswith("export "):
            name, _, value = text[7:].partition("=")
            self.env[name.strip()] = value.strip()
        elif text.startswith(BACKGROUND):
            started = Background(text, self.cwd, self.env)
            self.background.append(started)
            output = started.first_lines(len(command.expected), timeout_s=COMMAND_TIMEOUT_S)
            assert match_output(command.expected, output, self.ids), _diff(where, command, output)
        else:
            self._run_until_shown(where, command, text)

    def _run_until_shown(self, where: str, command: Command, text: str) -> None:
        patient = self.background and text.startswith(READ_ONLY)
        deadline = time.monotonic() + (SETTLE_S if patient else 0)
        while True:
            code, output = in_terminal(text, self.cwd, self.env)
            assert code < 64, f"{where}: exit code {code}\n{output}"
            if match_output(command.expected, output, self.ids):
                return
            assert time.monotonic() < deadline, _diff(where, command, output)
            time.sleep(0.5)

    def close(self) -> None:
        """Stop every background command, then say which did not exit 0."""
        codes = [(started.command, started.stop()) for started in self.background]
        assert all(code == 0 for _, code in codes), f"exit codes on SIGTERM: {codes}"


def _diff(where: str, command: Command, output: str) -> str:
    shown = "\n".join(command.expected)
    return f"{where}\n--- the README shows\n{shown}\n--- it printed\n{output}"


Script = tuple[str, list[Any]]
"""A scripted node: the model its config names, and what it answers in order."""
CHAT_NODES: dict[int, Script] = {
    11434: (
        "qwen3:1.7b",
        [
            tool_call("read_file", {"path": "facts.txt"}),
            reply(
                "facts.txt lists the seven phases of a loop, how their results are "
                "committed, and the five kinds of trigger."
            ),
            reply("The last phase is store: it writes the artifacts and the audit record."),
        ],
    ),
    8000: (
        "deepseek-coder-v2",
        [reply("Loops have seven phases: detect, analyze, decide, act, validate, learn, store.")],
    ),
}
API_NODES: dict[int, Script] = {
    11434: (
        "qwen3:1.7b",
        [
            reply(
                "A loop has seven phases: detect, analyze, decide, act, validate, learn and store."
            )
        ],
    ),
}


@contextmanager
def fake_cluster(
    config: Path, nodes: dict[int, Script], closed: tuple[int, ...] = ()
) -> Iterator[None]:
    """The README's nodes, scripted: served on free ports written into the copied config (the
    output does not show them); the ``closed`` ports held closed, as a server that is not
    running leaves them."""
    text = config.read_text()
    with ExitStack() as stack:
        for port in closed:
            held = stack.enter_context(socket.socket())
            try:
                held.bind(("127.0.0.1", port))
            except OSError as error:
                pytest.skip(f"port {port}, which the README shows down, is taken here ({error})")
        for port, (model, script) in nodes.items():
            assert f"127.0.0.1:{port}/v1" in text, f"{config} no longer names port {port}"
            assert model in text, f"{config} no longer names {model}"
            server = stack.enter_context(FakeLLMServer())
            server.script(model, script)
            text = text.replace(f"http://127.0.0.1:{port}/v1", server.base_url)
        config.write_text(text)
        yield


@contextmanager
def free_port(port: int) -> Iterator[None]:
    """The section's daemon (or scripted server, or receiver) listens on ``port``, or nothing
    must, as the README shows: skipped where it is taken."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the daemon binds
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            pytest.skip(f"port {port}, which the README's example listens on, is taken ({error})")
    yield


FIXTURES: dict[str, Callable[[Path], AbstractContextManager[None]]] = {
    "cluster": lambda root: fake_cluster(
        root / "examples" / "chat" / "loopengine.yaml", CHAT_NODES, closed=(1234,)
    ),
    "api cluster": lambda root: fake_cluster(
        root / "examples" / "api" / "loopengine.yaml", API_NODES
    ),
    "free-port 8787": lambda root: free_port(8787),
    "free-port 8788": lambda root: free_port(8788),
    "free-port 8789": lambda root: free_port(8789),
    "free-port 8790": lambda root: free_port(8790),
    "free-port 11434": lambda root: free_port(11434),
}


def _fresh_copy(tmp_path: Path) -> Path:
    root = tmp_path / "loopengine"
    ignore = shutil.ignore_patterns(".loopengine", "__pycache__", "cache", ".mypy_cache")
    for name in ("examples", "loops", "schemas"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    return root


def _environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPENGINE_", "NO_COLOR"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TERM"] = "xterm"
    env["HOME"] = str(root)
    return env


SECTIONS = sections(README.read_text())


@pytest.mark.parametrize("section", SECTIONS, ids=[s.title for s in SECTIONS])
def test_the_readme_runs_as_written(section: Section, tmp_path: Path) -> None:
    root = _fresh_copy(tmp_path)
    session = Session(root, _environment(root))
    with ExitStack() as stack:
        for name in sorted(section.fixtures):
            stack.enter_context(FIXTURES[name](root))
        try:
            for command in section.commands:
                session.run(command)
        finally:
            session.close()


def test_the_tour_is_covered() -> None:
    titles = {section.title for section in SECTIONS}
    assert {"1. Validate a loop", "4. Run a loop", "5. Chat with the cluster"} <= titles
    assert {"6. Run it unattended", "8. Actions"} <= titles


def test_an_id_stands_for_the_one_printed_and_binds_later_commands() -> None:
    ids: dict[str, str] = {}
    shown, printed = "a" * 32, "b" * 32
    assert match_output((f"run {shown} completed",), f"run {printed} completed\n", ids)
    assert ids == {shown: printed}
    assert not match_output((f"run {shown} completed",), f"run {'c' * 32} completed\n", ids)


def test_a_different_output_does_not_match() -> None:
    assert not match_output(("✓ 1 loop valid",), "✗ 1 error in 1 of 1 file\n", {})
    assert not match_output(("a", "b"), "a\n", {})
    assert not match_output(("a",), "a\nb\n", {})


def test_ellipses_match_text_and_lines_times_and_durations_are_normalised() -> None:
    expected = ("skipped: ConnectError: …", "...", "  ✓ detect   3.4 ms", "at 2026-01-01T00:00:00Z")
    actual = "skipped: ConnectError: refused\nmore\nlines\n✓ detect 12.0 ms\nat 2026-11-23T15:29:47.531+00:00\n"
    assert match_output(expected, actual, {})


def test_each_file_the_readme_shows_is_the_file_shipped() -> None:
    shown = re.findall(r"<!-- file: (\S+) -->\n```\w+\n(.*?)```", README.read_text(), re.S)
    assert shown, "the README shows no file"
    for path, text in shown:
        assert (ROOT / path).read_text() == text, f"README.md shows {path} otherwise than it is"
