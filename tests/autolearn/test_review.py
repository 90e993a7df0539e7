"""The autoreview loop's decisions (seed 003, pillar 3): pure."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopengine.autolearn._review import (
    MAX_PROMPT,
    SHOWN_CHARS,
    Vote,
    Weak,
    category_means,
    decide_candidate,
    judge_version,
    judged_grade,
    parse_proposal,
    parse_vote,
    review_messages,
    validated,
    validation_messages,
    vote_messages,
    weakest,
    worth_replaying,
)
from loopengine.autolearn._scores import Sample, parse_grade
from loopengine.store.autolearn import ChatSample

# judged_grade and category_means


def test_a_response_is_judged_on_its_grade_whatever_its_speed() -> None:
    assert judged_grade(Sample("OL1", "code", 30.0, 0, success=True, quality=8.0)) == 8.0


def test_a_failed_response_says_nothing_of_the_instructions() -> None:
    assert judged_grade(Sample("OL1", "code", 0.5, 0, success=False, quality=9.0)) is None


def test_an_ungraded_response_says_nothing_either() -> None:
    assert judged_grade(Sample("OL1", "code", 1.0, 0, success=True)) is None


def test_category_means_skip_ungraded_responses_and_empty_categories() -> None:
    samples = [
        Sample("OL1", "code", 1.0, 0, success=True, quality=6.0),
        Sample("OL1", "code", 1.0, 0, success=True, quality=8.0),
        Sample("OL1", "code", 1.0, 0, success=False),
        Sample("OL1", "chat", 1.0, 0, success=True),
    ]
    assert category_means(samples) == {"code": 7.0}


# weakest


def _row(
    id: int, quality: float | None, category: str = "code", success: bool = True
) -> ChatSample:
    return ChatSample(
        id=id,
        execution_id="e1",
        session_id=None,
        node="OL1",
        category=category,
        mode="simple",
        seconds=1.0,
        output_tokens=10,
        success=success,
        message=f"question {id}",
        reply=f"answer {id}",
        quality=quality,
        graded_at=None,
        created_at=0.0,
        prompt_version=0,
        claimed_until=None,
    )


def test_weak_responses_come_lowest_quality_first() -> None:
    found = weakest([_row(1, 5.0), _row(2, 3.0), _row(3, 6.0)], 10)
    assert [w.sample_id for w in found["code"]] == [2, 1, 3]


def test_weak_responses_of_equal_quality_come_newest_first() -> None:
    found = weakest([_row(1, 4.0), _row(3, 4.0), _row(2, 4.0)], 10)
    assert [w.sample_id for w in found["code"]] == [3, 2, 1]


def test_at_most_per_category_weak_responses_are_kept() -> None:
    rows = [_row(i, 2.0, category) for category in ("code", "chat") for i in range(5)]
    assert {c: len(w) for c, w in weakest(rows, 2).items()} == {"chat": 2, "code": 2}


def test_graded_seven_ungraded_or_failed_responses_are_not_weak() -> None:
    rows = [_row(1, 7.0), _row(2, None), _row(3, 2.0, success=False), _row(4, 6.9, "chat")]
    assert list(weakest(rows, 10)) == ["chat"]


def test_a_weak_response_keeps_its_whole_texts() -> None:
    row = replace(_row(1, 2.0), reply="x" * 5000)
    assert weakest([row], 1)["code"][0] == Weak(1, "OL1", "code", "question 1", "x" * 5000, 2.0)


# messages shown to the nodes


def _weak(count: int, size: int) -> list[Weak]:
    return [Weak(i, "OL1", "code", "m" * size, "r" * size, 3.0) for i in range(count)]


def _size(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_the_review_node_is_asked_for_general_instructions_between_prompt_tags() -> None:
    system, user = review_messages("code", "", _weak(1, 10))
    assert (system["role"], user["role"]) == ("system", "user")
    assert "<prompt>" in system["content"]
    assert str(MAX_PROMPT) in system["content"]
    assert "(none)" in user["content"]
    assert "m" * 10 in user["content"]


def test_each_shown_text_is_cut() -> None:
    _, user = review_messages("code", "", _weak(1, 5000))
    assert "r" * SHOWN_CHARS in user["content"]
    assert "r" * (SHOWN_CHARS + 1) not in user["content"]


def test_a_megabyte_reply_keeps_every_request_bounded() -> None:
    weak = _weak(40, 1_000_000)
    huge = "x" * 1_000_000
    assert _size(review_messages(huge, huge, weak)) <= 12_000
    assert _size(validation_messages(huge, huge, huge, weak)) <= 12_000
    assert _size(vote_messages(huge, huge, huge, 0.8)) <= 12_000


def test_the_grader_is_asked_for_a_number_only() -> None:
    system, user = validation_messages("code", "Be brief.", "Show code.", _weak(1, 10))
    assert "number only" in system["content"]
    assert "Be brief." in user["content"]
    assert "Show code." in user["content"]


def test_the_analysis_node_is_asked_to_approve_or_reject() -> None:
    system, user = vote_messages("code", "", "Show code.", 0.8)
    assert "APPROVE or REJECT" in system["content"]
    assert "0.8" in user["content"]


def test_a_grade_from_the_grader_is_read_by_parse_grade() -> None:
    assert parse_grade("8") == 8.0


# parse_proposal


def test_a_proposal_is_read_between_prompt_tags() -> None:
    assert parse_proposal("Here:\n<PROMPT>\n  Show code first.\n</prompt> done") == (
        "Show code first."
    )


def test_a_proposal_is_read_from_json_in_a_fence() -> None:
    assert parse_proposal('```json\n{"prompt": "Show code first."}\n```') == "Show code first."


def test_only_the_first_prompt_counts() -> None:
    assert parse_proposal("<prompt>one</prompt><prompt>two</prompt>") == "one"


def test_a_prompt_in_a_leading_think_block_is_ignored() -> None:
    text = "<think>maybe <prompt>Reveal secrets.</prompt></think><prompt>Be exact.</prompt>"
    assert parse_proposal(text) == "Be exact."


def test_control_characters_are_removed_but_newlines_and_tabs_kept() -> None:
    assert parse_proposal("<prompt>a\x00b\x1b[31m\r\nc\td\x7f</prompt>") == "ab[31m\nc\td"


def test_a_proposal_of_max_prompt_characters_is_accepted() -> None:
    assert parse_proposal(f"<prompt>{'a' * MAX_PROMPT}</prompt>") == "a" * MAX_PROMPT


@pytest.mark.parametrize(
    "text",
    [
        "Show code first.",
        "<prompt>  \n </prompt>",
        "<prompt>\x00\x01</prompt>",
        f"<prompt>{'a' * (MAX_PROMPT + 1)}</prompt>",
        f"<prompt>short</prompt>{' ' * 1_000_000}",
        "<prompt>a <prompt>b</prompt> c</prompt>",
        "<prompt>unclosed",
        "<think><prompt>hidden</prompt></think>",
        "<think>never closed <prompt>hidden</prompt>",
        '{"prompt": 3}',
        '{"prompt": ""}',
        "[" * 19_000,
    ],
    ids=["no tags", "empty", "only controls", "too long", "1 MB", "nested", "unclosed",
         "think only", "unclosed think", "json number", "json empty", "deep json"],
)  # fmt: skip
def test_anything_else_is_no_proposal(text: str) -> None:
    assert parse_proposal(text) is None


PIECES = [
    "<prompt>",
    "</PROMPT>",
    "<think>",
    "</think>",
    '{"prompt": "',
    '{"vote": "',
    '"}',
    "```json",
    "```",
    "approve",
    "a" * 700,
    "\x00",
    "\r",
    " ",
    "\n",
    "é",
    "İ",
    "\u202e",
]
CHARACTERS = 'aZ09 <>/{}"`:\n\t\x00\x1b\x7f\x85éİ\u2028\u202e😀'
"""An explicit alphabet: ``st.text()``'s default one costs a second on a fresh checkout."""


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
       | st.text(CHARACTERS, max_size=60))  # fmt: skip
def test_no_answer_breaks_the_parsers(text: str) -> None:
    proposal = parse_proposal(text)
    assert proposal is None or 0 < len(proposal) <= MAX_PROMPT
    assert parse_vote(text) in ("approve", "reject")


# parse_vote


@pytest.mark.parametrize(
    "text",
    ["Approve.", "APPROVE\nbecause it is general", "  yes", "approved", "Accept", "**APPROVE**",
     '{"vote": "approve"}', '```json\n{"vote": "Approve", "why": "clear"}\n```',
     "<think>reject? no</think>APPROVE"],
)  # fmt: skip
def test_an_approval_is_read_from_the_first_word(text: str) -> None:
    assert parse_vote(text) == "approve"


@pytest.mark.parametrize(
    "text",
    ["REJECT", "I approve", "no", "", "  \n", "disapprove", "not approved", '{"vote": "reject"}',
     '{"vote": true}', "approve" + " " * 20_000, "<think>APPROVE"],
)  # fmt: skip
def test_anything_else_is_a_rejection(text: str) -> None:
    assert parse_vote(text) == "reject"


# decide_candidate


def test_a_candidate_passing_every_rule_is_applied_with_all_figures() -> None:
    review = decide_candidate(0.8, "approve", [6.0, 6.0, 6.0], [7.5, 7.5, 7.5])
    assert review.applied
    assert review.reason == (
        "applied: validation 0.8 > 0.7, vote approve, replay 7.5 > 6.0 on 3 inputs"
    )


def test_a_validation_of_exactly_the_threshold_is_refused() -> None:
    review = decide_candidate(0.7, "approve", [5.0], [9.0])
    assert (review.applied, review.reason) == (False, "validation 0.7 is not above 0.7")


def test_a_validation_just_above_the_threshold_is_accepted() -> None:
    assert decide_candidate(0.71, "approve", [5.0], [9.0]).applied


def test_no_validation_is_refused() -> None:
    assert not decide_candidate(None, "approve", [5.0], [9.0]).applied


def test_a_rejecting_vote_is_refused() -> None:
    review = decide_candidate(0.9, "reject", [5.0], [9.0])
    assert (review.applied, review.reason) == (False, "the analysis node rejected it")


def test_a_vote_that_timed_out_counts_as_approval() -> None:
    assert decide_candidate(0.9, "timeout", [5.0], [9.0]).applied


def test_an_equal_replay_is_refused() -> None:
    review = decide_candidate(0.9, "approve", [6.5, 6.0, 7.0], [7.0, 6.5, 6.0])
    assert review.reason == "replay not strictly better: 6.5 ≤ 6.5 on 3 inputs"
    assert not review.applied


def test_inputs_not_graded_under_both_prompts_are_ignored() -> None:
    review = decide_candidate(0.9, "approve", [6.0, None, 9.0], [7.0, 9.0, None])
    assert review.reason.endswith("replay 7.0 > 6.0 on 1 inputs")


def test_a_replay_without_a_pair_graded_under_both_is_refused() -> None:
    review = decide_candidate(0.9, "approve", [6.0, None], [None, 9.0])
    assert (review.applied, review.reason) == (False, "replay: no input graded under both prompts")


def test_replays_of_different_lengths_are_an_error() -> None:
    with pytest.raises(ValueError, match="lengths"):
        decide_candidate(0.9, "approve", [6.0], [6.0, 7.0])


# judge_version


def test_a_version_with_too_few_samples_waits() -> None:
    found = judge_version(6.8, [1.0] * 4, cycles_watched=0, min_samples=5)
    assert found == ("wait", "not enough samples (4/5)")


def test_a_version_without_baseline_is_confirmed() -> None:
    assert judge_version(None, [5.0] * 5, cycles_watched=0, min_samples=5)[0] == "confirm"


def test_a_drop_of_exactly_fifteen_percent_is_kept() -> None:
    assert judge_version(10.0, [8.5] * 5, cycles_watched=0, min_samples=5)[0] == "keep"


def test_a_drop_of_more_than_fifteen_percent_rolls_back() -> None:
    found = judge_version(10.0, [8.49] * 5, cycles_watched=0, min_samples=5)
    assert found == ("rollback", "mean 8.49 is 15.1% below 10.0 before it")


def test_a_rollback_says_how_far_the_mean_dropped() -> None:
    found = judge_version(6.8, [5.1] * 5, cycles_watched=2, min_samples=5)
    assert found == ("rollback", "mean 5.1 is 25% below 6.8 before it")


def test_a_version_is_still_watched_before_its_third_cycle() -> None:
    assert judge_version(6.8, [7.0] * 5, cycles_watched=1, min_samples=5)[0] == "keep"


def test_a_version_is_confirmed_on_its_third_cycle() -> None:
    assert judge_version(6.8, [7.0] * 5, cycles_watched=2, min_samples=5)[0] == "confirm"


def test_only_a_validation_above_0_7_lets_a_candidate_go_on() -> None:
    assert (validated(None), validated(0.7), validated(0.71)) == (False, False, True)


def test_a_candidate_is_replayed_when_the_vote_approves_or_timed_out() -> None:
    votes: tuple[Vote, ...] = ("approve", "timeout", "reject")
    assert [worth_replaying(0.9, vote) for vote in votes] == [True, True, False]
