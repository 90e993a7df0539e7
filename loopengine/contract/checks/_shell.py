"""No value of the run is spliced into shell code: a ``${ }`` inside the script of ``sh -c``
(``bash -c``…) lets a value holding ``;`` or ``$(…)`` run as a command."""

from __future__ import annotations

from collections.abc import Sequence

from loopengine.contract.checks._skills import _SKILL_REFS
from loopengine.contract.checks._walk import Checked, at, walk

__all__ = ["check_shell", "script_index"]

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})
_ENV_TAKES_VALUE = frozenset({"-u", "--unset", "-C", "--chdir"})
_LONG_TAKES_VALUE = frozenset({"--rcfile", "--init-file"})
_SAFE_FORM = "[sh, -c, 'rm -rf \"$1\"', _, '${ input.dir }']"


def _program(word: object) -> str | None:
    return word.rsplit("/", 1)[-1] if isinstance(word, str) else None


def _after_env(command: Sequence[object]) -> int:
    """Where the program starts once ``env`` and its options and ``NAME=value`` words (if it
    leads) are passed over."""
    if _program(command[0]) != "env":
        return 0
    index = 1
    while index < len(command):
        word = command[index]
        if not isinstance(word, str) or not (word.startswith("-") or "=" in word):
            break
        index += 2 if word in _ENV_TAKES_VALUE else 1
    return index


def _values_taken(option: str) -> int:
    """How many words after ``option`` are its values: one for each ``o``/``O`` in a cluster of
    short flags (``-euo pipefail``), one for a long option that takes a file."""
    if option.startswith("--"):
        return int(option in _LONG_TAKES_VALUE)
    return sum(flag in "oO" for flag in option[1:])


def script_index(command: Sequence[object]) -> int | None:
    """The index of the script a shell runs with ``-c`` in ``command`` (an argv), if it does:
    the first word after the shell's options, once a ``-c`` (alone or among short flags, as in
    ``-ec``) was among them."""
    if not command:
        return None
    start = _after_env(command)
    if start >= len(command) or _program(command[start]) not in _SHELLS:
        return None
    runs_script, index = False, start + 1
    while index < len(command):
        word = command[index]
        if not isinstance(word, str) or word == "--":
            return index + (word == "--") if runs_script else None
        if not word.startswith(("-", "+")) or len(word) == 1:
            return index if runs_script else None
        index += 1 + _values_taken(word)
        runs_script |= word[0] == "-" and not word.startswith("--") and "c" in word[1:]
    return None


def _templated(value: object) -> bool:
    return isinstance(value, str) and "${" in value.replace("$${", "")


def check_shell(checked: Checked) -> None:
    for pattern, key, params_key in _SKILL_REFS:
        for path, node in walk(checked.document.data, pattern):
            command = at(node, params_key, "command")
            if at(node, key) != "shell" or not isinstance(command, list):
                continue
            index = script_index(command)
            if index is None or index >= len(command) or not _templated(command[index]):
                continue
            shell = " ".join(str(word) for word in command[:index])
            checked.error(
                (*path, params_key, "command", index),
                f"a ${{ }} inside the script of `{shell}` is spliced into shell code, so a value "
                "holding ';' or '$(…)' runs as a command: pass the value as an argument after "
                f"the script and quote it there, e.g. {_SAFE_FORM}",
            )
