"""What the autolearn loops keep: samples by window, exploration counts bounded by their cap,
routing orders replaced whole, history rotated."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from loopengine.store import NodeHealthRow, autolearn, threads
from loopengine.threads import new_batch


def _sample(node: str, category: str = "code") -> dict[str, Any]:
    return {
        "execution_id": "e" * 32,
        "session_id": None,
        "node": node,
        "category": category,
        "mode": "simple",
        "seconds": 1.0,
        "output_tokens": 10,
        "success": True,
        "message": "m" * 10_000,
        "reply": "r",
        "created_at": 0.0,
    }


def test_texts_are_cut_and_each_node_keeps_its_newest_window(connection: sa.Connection) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 8 + [_sample("M1")] * 2)
    window = autolearn.samples_in_window(connection, 3)
    assert [row.node for row in window] == ["OL1"] * 3 + ["M1"] * 2
    assert {len(row.message) for row in window} == {autolearn.MAX_TEXT}


def test_exploration_counts_stop_at_their_cap(connection: sa.Connection) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 9 + [_sample("M1", "other")])
    found = autolearn.exploration_counts(connection, "code", ["OL1", "M1"], cap=5)
    assert found == {"OL1": (5, 9), "M1": (0, 0)}


def test_a_routing_order_is_replaced_whole_with_a_new_version(connection: sa.Connection) -> None:
    with connection.begin():
        autolearn.put_routing(connection, "code", ["OL1", "M1"], "first", None, 1.0)
        version = autolearn.put_routing(connection, "code", ["M1", "OL1"], "swap", None, 2.0)
    row = autolearn.routing(connection)["code"]
    assert (version, row.nodes, row.reason) == (2, ["M1", "OL1"], "swap")


def test_history_keeps_the_newest_two_hundred(connection: sa.Connection) -> None:
    with connection.begin():
        for n in range(autolearn.HISTORY_KEPT + 30):
            autolearn.add_history(connection, "routing", "code", {"n": n}, None, float(n))
    kept = autolearn.history(connection)
    assert len(kept) == autolearn.HISTORY_KEPT
    assert kept[0].detail == {"n": autolearn.HISTORY_KEPT + 29}


def test_grading_claims_the_newest_answered_responses_once(connection: sa.Connection) -> None:
    failed = {**_sample("M1"), "success": False}
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 3 + [failed])
        first = autolearn.claim_ungraded(connection, 2, now=5.0, until=100.0)
        second = autolearn.claim_ungraded(connection, 2, now=6.0, until=100.0)
        third = autolearn.claim_ungraded(connection, 2, now=7.0, until=100.0)
    assert [row.id for row in first] == [3, 2]
    assert [row.id for row in second] == [1]
    assert third == []


def test_released_responses_are_claimed_again_but_graded_ones_are_not(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 2)
        claimed = autolearn.claim_ungraded(connection, 2, now=5.0, until=100.0)
        autolearn.grade(connection, claimed[0].id, 8.0)
        autolearn.release(connection, [row.id for row in claimed], until=100.0)
        again = autolearn.claim_ungraded(connection, 2, now=6.0, until=100.0)
    assert [row.id for row in again] == [claimed[1].id]


def test_a_claim_whose_process_died_is_taken_again_once_it_lapses(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 2)
        newest, oldest = autolearn.claim_ungraded(connection, 2, now=5.0, until=10.0)
        autolearn.grade(connection, newest.id, None)  # the grader gave none: done
        before = autolearn.claim_ungraded(connection, 2, now=9.0, until=20.0)
        after = autolearn.claim_ungraded(connection, 2, now=11.0, until=20.0)
    assert before == []
    assert [row.id for row in after] == [oldest.id]


def test_a_cycle_whose_claim_lapsed_gives_back_nothing_another_claimed(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")])
        [slow] = autolearn.claim_ungraded(connection, 1, now=5.0, until=10.0)
        [taken] = autolearn.claim_ungraded(connection, 1, now=11.0, until=20.0)
        autolearn.release(connection, [slow.id], until=10.0)
        again = autolearn.claim_ungraded(connection, 1, now=12.0, until=30.0)
    assert (taken.id, again) == (slow.id, [])


def test_pruning_keeps_each_node_and_categorys_newest_samples(connection: sa.Connection) -> None:
    with connection.begin():
        autolearn.insert_samples(connection, [_sample("OL1")] * 5 + [_sample("M1", "other")] * 2)
        assert autolearn.prune_samples(connection, keep=3) == 2
    kept = autolearn.samples_in_window(connection, 50)
    assert [(row.node, row.id) for row in kept] == [
        ("OL1", 3), ("OL1", 4), ("OL1", 5), ("M1", 6), ("M1", 7),
    ]  # fmt: skip


def test_the_last_recorded_score_of_each_node_starts_the_next_trend(
    connection: sa.Connection,
) -> None:
    first = {"code": [{"node": "M1", "score": 7.0, "speed": 10.0, "quality": 6.0,
                       "reliability": 10.0, "samples": 5}]}  # fmt: skip
    second = {"code": [{**first["code"][0], "score": 6.5}]}
    with connection.begin():
        autolearn.record_scores(connection, first, None, now=1.0)
        autolearn.record_scores(connection, second, None, now=2.0)
    assert autolearn.last_scores(connection) == {("code", "M1"): 6.5}


def test_applied_instructions_and_their_rollback_are_kept_in_the_history(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        version = autolearn.apply_prompt(
            connection, "code", "Be brief.", parent=0, baseline=6.0, reason="better",
            execution_id=None, now=1.0,
        )  # fmt: skip
        asked = [("code", 1, "worse"), ("chat", 1, "")]
        rolled = autolearn.roll_back_prompts(connection, asked, None, 2.0)
    assert version == 1
    assert [r.as_json() for r in rolled] == [
        {"category": "code", "from": 1, "to": 0, "reason": "worse"}
    ]
    kinds = [(entry.kind, entry.detail["to"]) for entry in autolearn.history(connection)]
    assert kinds == [("rollback", 0), ("prompt", 1)]


def test_instructions_on_a_version_no_longer_active_leave_no_history(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        autolearn.apply_prompt(
            connection, "code", "Be brief.", parent=0, baseline=None, reason="first",
            execution_id=None, now=1.0,
        )  # fmt: skip
        late = autolearn.apply_prompt(
            connection, "code", "Show code.", parent=0, baseline=None, reason="late",
            execution_id=None, now=2.0,
        )  # fmt: skip
    assert late is None
    assert [entry.detail["reason"] for entry in autolearn.history(connection)] == ["first"]


def test_routing_changes_read_back_with_their_history(connection: sa.Connection) -> None:
    change = {"category": "code", "from": ["OL1"], "to": ["M1", "OL1"]}
    with connection.begin():
        found = autolearn.put_routings(
            connection, [("code", ["M1", "OL1"], change)], "r", None, 1.0
        )
    assert (found["code"].nodes, found["code"].version) == (["M1", "OL1"], 1)
    assert [entry.detail for entry in autolearn.history(connection)] == [change]


def _reply(session: str, text: str, operation: str) -> threads.Batch:
    message = {"role": "assistant", "content": text}
    return new_batch(session, [message], operation_id=operation, now=1.0)


def test_an_answered_message_is_recorded_in_one_write_and_starts_the_next_in_one_read(
    connection: sa.Connection,
) -> None:
    health = [NodeHealthRow("OL1", 2, 9.0, "timeout", 1.0)]
    exchange = {"session_id": "s1", "category": "code", "message": "hi", "reply": "Hello."}
    remembered = ("ada", exchange, 5)
    with connection.begin():
        autolearn.RecordReply(
            ((_reply("s1", "Hello.", "op:reply"), 0),), health, [_sample("OL1")], remembered, 1.0
        ).apply(connection)
    start = autolearn.chat_start(connection, "code", ["OL1"], 5, "ada", "s1", "op:reply", True)
    assert ([m.content for m in start.thread.messages], start.thread.version) == (["Hello."], 1)
    assert start.asked
    assert start.nodes == health
    assert start.reading.explored == {"OL1": (1, 1)}
    assert start.reading.remembered is not None


def test_a_message_not_yet_in_its_thread_nor_with_health_to_read(connection: sa.Connection) -> None:
    start = autolearn.chat_start(connection, "code", ["OL1"], 5, None, "s1", "op:user", False)
    assert (start.thread.messages, start.asked, start.nodes) == ([], False, None)
    assert start.reading.remembered is None


def test_a_dry_run_records_the_reply_and_health_without_responses_nor_memory(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        autolearn.RecordReply((), [], [], None, 1.0).apply(connection)
    assert autolearn.exploration_counts(connection, "code", ["OL1"], 5) == {"OL1": (0, 0)}


def test_a_reply_the_thread_refuses_is_left_out_and_the_rest_kept(
    connection: sa.Connection,
) -> None:
    with connection.begin():
        threads.extend_thread(connection, _reply("s1", "First.", "op:reply"), 0)
    refused = (_reply("s1", "Other.", "op:reply"), 1)
    with connection.begin():
        autolearn.RecordReply((refused,), [], [_sample("OL1")], None, 1.0).apply(connection)
    said = [m.content for m in threads.read_thread(connection, "s1").messages]
    assert said == ["First."]
    assert autolearn.exploration_counts(connection, "code", ["OL1"], 5) == {"OL1": (1, 1)}
