"""The command line as users run it: exit codes, one-line errors, JSON, colour only on a TTY."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopengine import __version__
from loopengine.cli import main
from tests.conftest import MINIMAL, SEED_DIR, SEED_LOOP

SEED_CONFIG = str(SEED_DIR / "loopengine.yaml")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopengine", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": ""},
        check=False,
    )


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"loopengine {__version__}"


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "validate" in capsys.readouterr().out


def test_validate_the_seed_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SEED_LOOP), "--config", SEED_CONFIG]) == 0
    assert capsys.readouterr().out.strip() == "✓ 1 loop valid"


def test_validate_an_invalid_loop_exits_1_with_located_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_text(
        "id: x\ntrigger: {type: manual}\ndecide:\n  fallback_action: auto_fix_everything\n"
    )
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{bad}:4:20: decide.fallback_action: unknown action 'auto_fix_everything' (known: "
        "escalate_to_human, log_and_notify, log_only, none, notify)",
        "✗ 1 error in 1 of 1 file",
    ]


def test_validate_refuses_a_cron_that_never_fires_where_it_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "feb.yaml"
    bad.write_text("id: feb\ntrigger:\n  type: cron\n  config: {expression: '0 0 31 2 *'}\n")
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{bad}:4:24: trigger.config.expression: cron expression '0 0 31 2 *' never fires: no "
        "date matches it (February has 29 days at most; April, June, September and November "
        "30): change the day or the month",
        "✗ 1 error in 1 of 1 file",
    ]


def test_validate_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "loops").mkdir()
    for name in ("a", "b"):
        (tmp_path / "loops" / f"{name}.yaml").write_text(MINIMAL.replace("minimal", name))
    assert main(["validate", str(tmp_path / "loops")]) == 0
    assert capsys.readouterr().out.strip() == "✓ 2 loops valid"


def test_validate_a_folder_refuses_a_loop_id_used_twice_naming_both_places(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    loops = tmp_path / "loops"
    loops.mkdir()
    (loops / "a.yaml").write_text(MINIMAL.replace("minimal", "ticker"))
    (loops / "b.yaml").write_text("# the same id\n" + MINIMAL.replace("minimal", "ticker"))
    assert main(["validate", str(loops)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{loops / 'b.yaml'}:2:5: id: loop id 'ticker' is already used by {loops / 'a.yaml'}:1:5;"
        " ids must be unique in a loops folder (rename one of them)",
        "✗ 1 error in 1 of 2 files",
    ]


def test_validate_a_folder_refuses_a_link_out_of_it_and_shows_nothing_of_its_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$saltsalt$Zm9vYmFyYmF6cXV4:19700:0:99999:7:::\nbin:*:19700:::\n")
    loops = tmp_path / "loops"
    loops.mkdir()
    (loops / "a.yaml").write_text(MINIMAL)
    (loops / "leak.yaml").symlink_to(secret)
    assert main(["validate", str(loops)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{loops / 'leak.yaml'}:1:1: a link to {secret}, outside {loops}: not read (move the "
        "file into the folder, or link to a file inside it)",
        "✗ 1 error in 1 of 2 files",
    ]


def test_validate_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("id: x\ntrigger: {type: manual}\ndurability: fast\n")
    assert main(["validate", str(tmp_path / "x.yaml"), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert (result["valid"], result["errors"], result["warnings"]) == (False, 1, 0)
    (diagnostic,) = result["files"][0]["diagnostics"]
    assert {k: diagnostic[k] for k in ("line", "column", "path", "level")} == {
        "line": 3,
        "column": 13,
        "path": "durability",
        "level": "error",
    }


HOOK = (
    "id: deployed\ntrigger:\n  type: webhook\n"
    "  config: {path: deploys, secret: '${ secret.DEPLOY_SECRET }'}\n"
    "decide: {decision_tree: [], fallback_action: log_only}\n"
)


def test_validate_refuses_a_webhook_secret_under_16_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hook.yaml").write_text(HOOK)
    monkeypatch.setenv("DEPLOY_SECRET", "hunter2")
    assert main(["validate", "hook.yaml"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "hook.yaml:4:35: trigger.config.secret: webhook secret $DEPLOY_SECRET: the secret is 7 "
        "bytes; use at least 16 (a short key is guessed, an empty one signs anything)",
        "✗ 1 error in 1 of 1 file",
    ]


def test_validate_warns_that_a_daemon_refuses_a_webhook_whose_secret_is_not_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hook.yaml").write_text(HOOK)
    monkeypatch.delenv("DEPLOY_SECRET", raising=False)
    assert main(["validate", "hook.yaml"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "hook.yaml:4:35: warning: trigger.config.secret: webhook secret $DEPLOY_SECRET is not "
        "set: a webhook's secret must hold at least 16 bytes, and a daemon refuses this loop "
        "without it; export DEPLOY_SECRET=… where the daemon runs",
        "✓ 1 loop valid, 1 warning",
    ]


def test_json_flag_is_accepted_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "validate", str(SEED_LOOP), "--config", SEED_CONFIG]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True


def test_missing_path_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "nowhere.yaml"]) == 2
    assert capsys.readouterr().err.strip() == "error: nowhere.yaml: no such file or folder"


def test_folder_without_loops_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty")]) == 2
    assert "no loop files" in capsys.readouterr().err


def test_invalid_config_is_reported_with_its_position(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "loopengine.yaml").write_text("plugins: [./missing.py]\n")
    (tmp_path / "loop.yaml").write_text(MINIMAL)
    assert main(["validate", "loop.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{Path('loopengine.yaml')}:1:11: plugins[0]: plugin file './missing.py'")


def test_validate_checks_loopengine_yaml_as_the_config(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SEED_DIR)
    assert main(["validate", "loopengine.yaml"]) == 0
    assert capsys.readouterr().out.strip() == "✓ 1 config valid"


def test_validate_reports_every_problem_of_a_config_with_its_position(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "loopengine.yaml").write_text(
        "databse: sqlite:///x.db\ncluster:\n  nodes: {A: {base_url: 'http://127.0.0.1:1/v1', "
        "model: m}}\n  routing: {simple: [B]}\n"
    )
    assert main(["validate", "loopengine.yaml", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    (checked,) = result["files"]
    assert (checked["kind"], checked["valid"]) == ("config", False)
    assert [(d["line"], d["column"], d["message"]) for d in checked["diagnostics"]] == [
        (1, 1, "unknown key 'databse'; did you mean 'database'?"),
    ]


def test_validate_a_folder_and_its_config_together(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SEED_DIR)
    assert main(["validate", ".", "loopengine.yaml"]) == 0
    assert capsys.readouterr().out.strip() == "✓ 1 loop and 1 config valid"


def test_schema_prints_the_loop_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"].endswith("loop.schema.json")


def test_schema_prints_the_config_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "config"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"].endswith("config.schema.json")


def test_skills_lists_builtins_and_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skills", "--config", SEED_CONFIG]) == 0
    out = capsys.readouterr().out
    assert re.search(r"seo_role_audit\s+plugin", out)
    assert "(check_content: bool = True)" in out
    assert "log_only" in out
    assert "database" in out


def test_skills_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["skills", "--json", "--config", SEED_CONFIG]) == 0
    result = json.loads(capsys.readouterr().out)
    fix = next(s for s in result["skills"] if s["name"] == "seo_role_fix")
    assert fix["params"] == [
        {"name": "dry_run", "type": "bool", "default": False},
    ]
    assert "metric" in result["source_types"]


def test_tools_lists_the_builtins_a_model_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["list_dir", "read_file", "search_files", "query_db", "http_get"]


def test_tools_json_lists_schemas(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(
        "from loopengine import tool\n\n@tool\ndef find(term: str) -> str:\n"
        '    """Find a term."""\n    return term\n'
    )
    (tmp_path / "loopengine.yaml").write_text("plugins: [./t.py]\n")
    assert main(["tools", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["tools"][-1]
    assert (found["name"], found["parameters"]["required"]) == ("find", ["term"])


def test_a_real_process_prints_no_traceback_on_bad_input(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("id: [\n")
    result = _cli("validate", "broken.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout.startswith("broken.yaml:2:1: invalid YAML")


def test_a_real_process_shows_the_traceback_with_debug(tmp_path: Path) -> None:
    (tmp_path / "loopengine.yaml").write_text("plugins: [./missing.py]\n")
    result = _cli("--debug", "validate", "x.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_usage_errors_exit_2() -> None:
    result = _cli("validate")
    assert result.returncode == 2
    assert "the following arguments are required: PATH" in result.stderr


def test_piped_output_has_no_colour_codes(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(MINIMAL)
    assert "\x1b[" not in _cli("validate", "x.yaml", cwd=tmp_path).stdout


def test_force_color_adds_colour(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    (tmp_path / "x.yaml").write_text(MINIMAL)
    assert main(["validate", str(tmp_path / "x.yaml")]) == 0
    assert "\x1b[" in capsys.readouterr().out


@pytest.mark.parametrize("example", ["seo_audit", "quickstart"])
def test_the_shipped_examples_validate(
    example: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(SEED_DIR.parent / example)
    assert main(["validate", "."]) == 0
    assert capsys.readouterr().out.strip() == "✓ 1 loop valid"


@pytest.mark.parametrize("command", [["schema", "loop"], ["skills"], ["validate", "x.yaml"]])
def test_every_command_imports_cleanly_in_a_fresh_process(
    command: list[str], tmp_path: Path
) -> None:
    (tmp_path / "x.yaml").write_text(MINIMAL)
    result = _cli(*command, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def _loaded_by(command: list[str], folder: Path, watched: tuple[str, ...]) -> list[Any]:
    """The exit code of ``command`` run in a fresh interpreter in ``folder``, and which of the
    ``watched`` modules it loaded."""
    code = (
        "import json, sys\nfrom loopengine.cli import main\n"
        f"code = main({command!r})\n"
        f"print(json.dumps([code, [m for m in {watched!r} if m in sys.modules]]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, check=True
    )
    loaded: list[Any] = json.loads(result.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize("command", [["validate", "seo_audit_loop.yaml"], ["schema"], ["skills"]])
def test_read_commands_load_no_database_or_http_layer(command: list[str]) -> None:
    assert _loaded_by(command, SEED_DIR, ("sqlalchemy", "httpx")) == [0, []]


def test_validate_checks_without_building_what_only_running_needs() -> None:
    """The checks find every error the models would; the loop models, anyio and croniter (for
    a plain cron expression) are for running."""
    watched = ("loopengine.contract._loop", "anyio", "croniter")
    assert _loaded_by(["validate", "seo_audit_loop.yaml"], SEED_DIR, watched) == [0, []]


@pytest.mark.parametrize("flags", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_the_quickstart_completes_when_nothing_is_stale(
    flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "quickstart"
    shutil.copytree(SEED_DIR.parent / "quickstart", folder)
    (folder / "cache").mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    assert main(["metrics", "record", "infra.cache.usage", "0.93"]) == 0
    assert main(["run", "cache_cleanup.yaml", *flags]) == 0


def test_each_loop_is_validated_with_the_config_nearest_to_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(SEED_DIR.parent.parent)
    monkeypatch.delenv("LOOPENGINE_CONFIG", raising=False)
    monkeypatch.setenv("DEPLOY_HOOK_SECRET", "whsec_HQ1EWSWIHUvCuQR2kEcFr5EKy/BSlcIf")
    assert main(["validate", "examples"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "✗ 5 errors, 1 warning in 1 of 15 files"
    assert all(line.startswith("examples/mistakes/broken.yaml:") for line in out[:-1])
    assert "did you mean 'seo_role_audit'" in "\n".join(out)


def test_plain_params_are_checked_without_jsonschema() -> None:
    """``type``, bounds and a default that fits need no meta-schema (a third of ``run``'s
    start-up); the quickstart's params are such."""
    quickstart = SEED_DIR.parent / "quickstart"
    assert _loaded_by(["validate", "cache_cleanup.yaml"], quickstart, ("jsonschema",)) == [0, []]


@pytest.mark.parametrize(
    "command",
    [["emit", "cache.swept", "--data", '{"files": 3}'], ["metrics", "record", "cpu.load", "0.9"]],
    ids=" ".join,
)
def test_feeding_the_store_builds_no_loop_model_nor_runtime(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts call ``emit`` and ``metrics record`` in loops: a row needs the config's store
    URL, not the models, the schema checker, the skills, the engine nor an event loop."""
    shutil.copytree(SEED_DIR.parent / "quickstart", tmp_path / "quickstart")
    monkeypatch.delenv("LOOPENGINE_DATABASE", raising=False)
    watched = (
        "pydantic",
        "jsonschema",
        "loopengine.contract._loop",
        "loopengine.skills",
        "loopengine.engine",
        "anyio",
    )
    assert _loaded_by(command, tmp_path / "quickstart", watched) == [0, []]
