"""``loopengine plan``: the exact fire instants of a cron loop, DST decisions spelled out."""

from __future__ import annotations

from tests.daemon.conftest import Workspace

NIGHTLY = """\
id: nightly
trigger: {type: cron, config: {expression: "30 2 * * *", timezone: Europe/Paris}}
decide: {decision_tree: [], fallback_action: log_only}
"""


def _fires(workspace: Workspace, *args: str) -> list[dict[str, str | None]]:
    (workspace.root / "loops" / "nightly.yaml").write_text(NIGHTLY)
    [cron] = workspace.json("plan", "nightly", *args)["cron"]
    return list(cron["fires"])


def test_spring_forward_fires_once_right_after_the_gap(workspace: Workspace) -> None:
    fires = _fires(workspace, "--from", "2027-03-27T12:00", "--count", "2")
    assert [f["utc"] for f in fires] == ["2027-03-28T01:00:00+00:00", "2027-03-29T00:30:00+00:00"]
    assert "does not exist (DST gap)" in str(fires[0]["note"])
    assert fires[1]["note"] is None


def test_fall_back_fires_once_at_the_first_of_the_repeated_times(workspace: Workspace) -> None:
    fires = _fires(workspace, "--from", "2027-10-30T12:00", "--to", "2027-11-01T12:00")
    assert [f["local"] for f in fires] == [
        "2027-10-31T02:30:00+02:00",
        "2027-11-01T02:30:00+01:00",
    ]
    assert "happens twice (DST fold)" in str(fires[0]["note"])


def test_a_bad_time_is_one_clear_line(workspace: Workspace) -> None:
    (workspace.root / "loops" / "nightly.yaml").write_text(NIGHTLY)
    done = workspace.cli("plan", "nightly", "--from", "yesterday", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: time 'yesterday': write ISO 8601, e.g. 2027-03-28T00:00 or 2027-03-28T00:00+01:00"
    ]
