"""Each operation the CLI and the API share, run on a real SQLite store: what it returns, and
the error it raises for what does not exist or is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from loopengine.app import (
    NAMED,
    LoopSource,
    Operation,
    daemons_alive,
    emit,
    events,
    execution,
    execution_named,
    finished_job,
    history,
    latest,
    list_flags,
    loop_source,
    metric_points,
    metric_series,
    named,
    pause,
    perform,
    read_now,
    record_metric,
    served_loop,
    set_flag,
    trigger,
    waiting_approvals,
    write_now,
)
from loopengine.builtins import builtin_registry
from loopengine.contract import Config, Loop, LoopLoader
from loopengine.contract.checks import Env
from loopengine.errors import ContractError, NotFound, NotResumable
from loopengine.store import ExecutionRow, Store, executions, open_read_only, write_once

T = TypeVar("T")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def on_store(url: str, operation: Operation[T]) -> T:
    """``operation`` performed on the async store at ``url``, as the daemon's API does."""

    async def main() -> T:
        async with Store.open(url) as store:
            return await perform(store, operation)

    return anyio.run(main)


def on_reader(url: str, operation: Operation[T]) -> T:
    """``operation`` read without an event loop, as the read-only commands do."""
    with open_read_only(url) as reader:
        return read_now(reader, operation)


def manual_loop() -> Loop:
    text = (
        "id: job\ntrigger: {type: manual}\ndecide: {decision_tree: [], fallback_action: log_only}\n"
    )
    report = LoopLoader(Env(builtin_registry(), frozenset(Config().storage))).load_text(text, "x")
    assert report.loop is not None, report.diagnostics
    return report.loop


def test_one_id_found_is_the_execution_named() -> None:
    assert execution_named("abcd", ["abcd1234"]) == "abcd1234"


def test_nothing_found_says_where_to_look() -> None:
    with pytest.raises(NotResumable) as raised:
        execution_named("abcd", [])
    assert str(raised.value) == "no execution 'abcd' (see `loopengine history`)"


def test_several_found_are_listed_and_more_of_the_id_asked_for() -> None:
    with pytest.raises(NotResumable) as raised:
        execution_named("abcd", ["abcd1", "abcd2"])
    assert str(raised.value) == "'abcd' names several executions (abcd1, abcd2): give more of it"


def test_more_found_than_are_listed_end_the_list_with_an_ellipsis() -> None:
    found = [f"abcd{n}" for n in range(NAMED)]
    with pytest.raises(NotResumable, match=r"\(abcd0, abcd1, abcd2, abcd3, abcd4, …\)"):
        execution_named("abcd", found)


def test_an_unknown_execution_is_not_found(url: str) -> None:
    with pytest.raises(NotFound, match=r"^no execution 'e-1'$"):
        on_store(url, execution("e-1"))


def test_a_prefix_naming_no_execution_says_where_to_look(url: str) -> None:
    write_now(url, emit("made.store", {}, "test"))
    with pytest.raises(NotResumable, match="see `loopengine history`"):
        on_reader(url, named("abcd"))


def test_history_of_an_empty_store_is_one_last_page(url: str) -> None:
    page = on_store(url, history(limit=5))
    assert (page.rows, page.next_cursor) == ([], None)


@pytest.mark.parametrize("limit", [0, 10_001])
def test_history_refuses_a_limit_out_of_bounds(url: str, limit: int) -> None:
    with pytest.raises(ContractError, match="write a whole number from 1 to 10000"):
        on_store(url, history(limit=limit))


def test_history_refuses_a_cursor_no_page_gave(url: str) -> None:
    with pytest.raises(ContractError):
        on_store(url, history(cursor="not-a-cursor"))


def test_an_event_emitted_is_listed_newest_first(url: str) -> None:
    first = write_now(url, emit("page.updated", {"page": 1}, "cli"))
    second = on_store(url, emit("page.updated", {"page": 2}, "api"))
    listed = on_reader(url, events(lambda name: True, 10))
    assert [(e.id, e.source, e.data) for e in listed] == [
        (second.id, "api", {"page": 2}),
        (first.id, "cli", {"page": 1}),
    ]


def test_an_event_with_a_bad_name_is_refused_before_anything_is_written(url: str) -> None:
    kept = write_now(url, emit("page.updated", {}, "cli"))
    with pytest.raises(ContractError):
        write_now(url, emit("bad name!", {}, "cli"))
    assert on_reader(url, events(lambda name: True, 10)) == [kept]


def test_pausing_twice_changes_the_loop_once(url: str) -> None:
    assert [on_store(url, pause("job", True)) for _ in range(2)] == [
        pause_result("paused", True),
        pause_result("paused", False),
    ]
    assert on_store(url, pause("job", False)) == pause_result("active", True)


def pause_result(state: str, changed: bool) -> Any:
    from loopengine.app import Paused

    return Paused("job", state, changed)  # type: ignore[arg-type]


def test_a_loop_no_daemon_serves_is_not_found(url: str) -> None:
    with pytest.raises(NotFound, match=r"^no loop 'job' is served \(see GET /loops\)$"):
        on_store(url, served_loop("job", 30.0))


def test_no_daemon_is_alive_on_a_new_store(url: str) -> None:
    assert on_store(url, daemons_alive(30.0)) is False


def test_a_trigger_queues_a_job_that_has_not_finished(url: str) -> None:
    queued = on_store(url, trigger(manual_loop(), {}, "cli"))
    assert (queued.loop_id, queued.status) == ("job", "queued")
    assert on_store(url, finished_job(queued.job_id)) is None


def test_a_repeated_idempotency_key_answers_with_the_first_job(url: str) -> None:
    loop = manual_loop()
    first = on_store(url, trigger(loop, {}, "api", idempotency_key="k"))
    again = on_store(url, trigger(loop, {}, "api", idempotency_key="k"))
    assert (again.job_id, again.status) == (first.job_id, "duplicate")


def test_a_paused_loop_does_not_queue_the_job(url: str) -> None:
    on_store(url, pause("job", True))
    with pytest.raises(ContractError, match=r"^loop 'job' did not queue the job: "):
        on_store(url, trigger(manual_loop(), {}, "cli"))


def test_a_metric_recorded_is_a_series_with_its_latest_value(url: str) -> None:
    sample = write_now(url, record_metric("queue.size", 3.0, {"host": "a"}))
    assert sample.labels == {"host": "a"}
    [series] = on_reader(url, metric_series(lambda name: True, 10))
    assert (series.name, series.value, series.points) == ("queue.size", 3.0, 1)


def test_a_flag_set_is_listed_with_its_state(url: str) -> None:
    on_store(url, set_flag("send", True))
    assert [(f.name, f.enabled) for f in on_store(url, list_flags())] == [("send", True)]


def test_nothing_waits_for_approval_on_a_new_store(url: str) -> None:
    assert on_store(url, waiting_approvals(10)) == []


def _executions(url: str, loop_id: str, count: int) -> None:
    for n in range(count):
        row = ExecutionRow(
            id=f"{loop_id}-{n}",
            loop_id=loop_id,
            loop_version="v",
            loop_file=f"{loop_id}.yaml",
            status="finished",
            job_id=f"{loop_id}-{n}",
            trigger_type="manual",
            durability="phase",
            dry_run=False,
            started_at=float(n),
            outcome="completed",
        )
        write_once(url, executions.insert_execution, row)


def test_latest_is_each_loop_s_newest_executions_newest_first(url: str) -> None:
    _executions(url, "a", 4)
    _executions(url, "b", 1)
    found = on_store(url, latest(["a", "b", "c"], 3))
    assert {loop: [row.id for row in rows] for loop, rows in found.items()} == {
        "a": ["a-3", "a-2", "a-1"],
        "b": ["b-0"],
        "c": [],
    }


def test_latest_reads_every_loop_at_once() -> None:
    """A thousand loops on the overview were a thousand reads."""
    steps = latest([f"loop{n}" for n in range(1000)], 20)
    next(steps)
    with pytest.raises(StopIteration):
        steps.send({})


def test_events_are_listed_within_the_times_asked(url: str) -> None:
    emitted = write_now(url, emit("page.updated", {}, "cli"))
    at = emitted.created_at
    assert on_reader(url, events(lambda name: True, 10, since=at)) == [emitted]
    assert on_reader(url, events(lambda name: True, 10, since=at + 1)) == []
    assert on_reader(url, events(lambda name: True, 10, until=at)) == []
    assert on_reader(url, events(lambda name: True, 10, until=at + 1)) == [emitted]


def test_a_series_points_are_read_newest_first(url: str) -> None:
    for value in (1.0, 2.0, 3.0):
        write_now(url, record_metric("queue.size", value, {}))
    assert [p.value for p in on_reader(url, metric_points("queue.size", 2))] == [3.0, 2.0]


def _loop_file(tmp_path: Path, text: str) -> tuple[Loop, LoopLoader]:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    loader = LoopLoader(Env(builtin_registry(), frozenset(Config().storage)))
    report = loader.load_file(path)
    assert report.loop is not None, report.diagnostics
    return report.loop, loader


JOB = "id: job\ntrigger: {type: manual}\ndecide: {decision_tree: [], fallback_action: log_only}\n"


def test_a_loop_s_file_unchanged_is_the_version_served(tmp_path: Path) -> None:
    loop, loader = _loop_file(tmp_path, JOB)
    assert loop_source(loop, loader) == LoopSource(JOB, True, (), ())


def test_a_loop_s_file_edited_is_no_longer_the_version_served(tmp_path: Path) -> None:
    loop, loader = _loop_file(tmp_path, JOB)
    Path(loop.file).write_text(JOB + "# edited\n")
    assert loop_source(loop, loader) == LoopSource(JOB + "# edited\n", False, (), ())


def test_a_loop_s_file_edited_out_of_shape_has_its_errors(tmp_path: Path) -> None:
    loop, loader = _loop_file(tmp_path, JOB)
    Path(loop.file).write_text(JOB.replace("log_only", "7"))
    source = loop_source(loop, loader)
    assert not source.served
    assert [e.split(": ", 1)[1].split(":")[0] for e in source.errors] == ["decide.fallback_action"]


def test_a_loop_s_file_gone_is_an_error_without_text(tmp_path: Path) -> None:
    loop, loader = _loop_file(tmp_path, JOB)
    Path(loop.file).unlink()
    source = loop_source(loop, loader)
    assert (source.text, source.served) == (None, False)
    assert "cannot read" in source.errors[0]
