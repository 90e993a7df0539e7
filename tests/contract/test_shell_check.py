"""A value of the run spliced into the script of ``sh -c`` is refused at validate, where it is
written, with the safe form in the message; values passed as arguments are fine."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from loopengine.contract import LoadReport
from loopengine.contract.checks._shell import script_index

SAFE_FORM = "[sh, -c, 'rm -rf \"$1\"', _, '${ input.dir }']"


def _loop(command: str, *, where: str = "act") -> str:
    step = {
        "act": f"act:\n  actions:\n    - action_id: clean\n      skill_id: shell\n"
        f"      params:\n        command: {command}\n",
        "rollback": "act:\n  actions:\n    - action_id: clean\n      skill_id: log_only\n"
        f"      rollback_skill: shell\n      rollback_params:\n        command: {command}\n",
        "analyze": "analyze:\n  analysis_steps:\n    - name: look\n      skill_id: shell\n"
        f"      params:\n        command: {command}\n",
    }[where]
    decided = "none" if where == "analyze" else "clean"
    return (
        "id: cleanup\ntrigger: {type: manual}\nparams:\n  dir: {type: string}\n"
        f"decide:\n  fallback_action: {decided}\n{step}"
    )


def _messages(report: LoadReport) -> list[str]:
    return [d.format() for d in report.diagnostics]


def test_a_reference_inside_the_script_of_sh_c_is_an_error_at_the_script(
    load: Callable[[str], LoadReport],
) -> None:
    report = load(_loop("[sh, -c, 'rm -rf ${ input.dir }']"))
    assert _messages(report) == [
        "loop.yaml:12:27: act.actions[0].params.command[2]: a ${ } inside the script of "
        "`sh -c` is spliced into shell code, so a value holding ';' or '$(…)' runs as a "
        "command: pass the value as an argument after the script and quote it there, e.g. "
        f"{SAFE_FORM}"
    ]


def test_the_safe_form_validates(load: Callable[[str], LoadReport]) -> None:
    report = load(_loop(SAFE_FORM))
    assert report.ok, _messages(report)


@pytest.mark.parametrize(
    "command",
    [
        "[rm, -rf, '${ input.dir }']",
        "[sh, -c, 'echo $${ HOME }']",
        "[sh, '${ input.dir }']",
        "[python3, -c, 'print(\"${ input.dir }\")']",
    ],
    ids=["no-shell", "literal", "script-file", "not-a-shell"],
)
def test_a_reference_outside_a_shell_script_is_fine(
    command: str, load: Callable[[str], LoadReport]
) -> None:
    report = load(_loop(command))
    assert report.ok, _messages(report)


@pytest.mark.parametrize("where", ["rollback", "analyze"])
def test_rollbacks_and_analysis_steps_are_checked_too(
    where: str, load: Callable[[str], LoadReport]
) -> None:
    report = load(_loop("[bash, -c, '${ input.dir }']", where=where))
    assert [d.message.split(" is spliced")[0] for d in report.errors] == [
        "a ${ } inside the script of `bash -c`"
    ]


@pytest.mark.parametrize(
    ("command", "script"),
    [
        (["sh", "-c", "x"], 2),
        (["/bin/bash", "-euo", "pipefail", "-c", "x", "_", "y"], 4),
        (["bash", "-ec", "x"], 2),
        (["bash", "-c", "--", "x"], 3),
        (["bash", "-o", "errexit", "-c", "x"], 4),
        (["env", "-i", "A=1", "zsh", "-c", "x"], 5),
        (["/usr/bin/env", "-u", "HOME", "dash", "-lc", "x"], 5),
        (["sh", "script.sh", "-c"], None),
        (["sh", "-e", "script.sh"], None),
        (["bash", "--norc", "-c"], None),
        (["shellcheck", "-c", "x"], None),
        (["env"], None),
    ],
)
def test_script_index_finds_the_script_a_shell_runs_with_c(
    command: list[str], script: int | None
) -> None:
    assert script_index(command) == script
