"""Cron schedules in a time zone: next fires, and Vixie cron's rules when DST moves the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from loopengine.errors import TriggerError
from loopengine.triggers import NICKNAMES, CronSchedule, Fire

HOUR = 3600.0

DST_CHANGES = [
    ("Europe/Paris", "2027-03-28T01:00"),
    ("Europe/Paris", "2027-10-31T01:00"),
    ("America/New_York", "2027-03-14T07:00"),
    ("America/New_York", "2027-11-07T06:00"),
    ("Australia/Lord_Howe", "2027-04-03T15:00"),
    ("Australia/Lord_Howe", "2027-10-02T15:30"),
]
"""The DST changes of 2027 in a few zones, in UTC."""

EXPRESSIONS = [
    "30 2 * * *",
    "45 1 * * *",
    "0 3 * * *",
    "0-50/10 2 * * *",
    "15,45 1-3 * * *",
    "*/15 * * * *",
    "*/10 2 * * *",
    "* 2 * * *",
    "0 * * * *",
    "5 */2 * * *",
    "25 * * * *",
    "10,40 * * * *",
    "*/20 1 * * *",
]


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def at_utc(fires: list[Fire]) -> list[str]:
    return [f"{datetime.fromtimestamp(f.at, UTC):%m-%d %H:%M:%S}" for f in fires]


def local(fires: list[Fire]) -> list[str]:
    return [f.local.isoformat() for f in fires]


def between(expression: str, zone: str, start: str, end: str) -> list[Fire]:
    return CronSchedule.parse(expression, zone).fires(utc(start), utc(end), 1000)


def test_utc_daily_fires_at_midnight_each_day() -> None:
    fires = between("0 0 * * *", "UTC", "2027-01-01T10:00", "2027-01-04T00:00")
    assert local(fires) == [
        "2027-01-02T00:00:00+00:00",
        "2027-01-03T00:00:00+00:00",
        "2027-01-04T00:00:00+00:00",
    ]


def test_six_fields_put_seconds_first() -> None:
    fires = between("*/2 * * * * *", "UTC", "2027-01-01T00:00:01", "2027-01-01T00:00:06")
    assert at_utc(fires) == ["01-01 00:00:02", "01-01 00:00:04", "01-01 00:00:06"]


def test_next_fire_is_strictly_after_the_instant_given() -> None:
    schedule = CronSchedule.parse("0 * * * *")
    assert schedule.next_fire(utc("2027-01-01T10:00")).at == utc("2027-01-01T11:00")
    assert schedule.next_fire(utc("2027-01-01T10:59:59.5")).at == utc("2027-01-01T11:00")


def test_a_fixed_time_skipped_by_spring_forward_fires_once_right_after_the_gap() -> None:
    fires = between("30 2 * * *", "Europe/Paris", "2027-03-27T12:00", "2027-03-28T12:00")
    assert fires == [
        Fire(
            utc("2027-03-28T01:00"),
            datetime(2027, 3, 28, 3, 0, tzinfo=ZoneInfo("Europe/Paris")),
            "02:30 does not exist (DST gap): fires at 03:00, right after the gap",
        )
    ]


def test_a_fixed_time_repeated_by_fall_back_fires_once_at_the_first() -> None:
    fires = between("30 2 * * *", "Europe/Paris", "2027-10-30T12:00", "2027-10-31T12:00")
    assert at_utc(fires) == ["10-31 00:30:00"]
    assert fires[0].note == "02:30 happens twice (DST fold): fires once, at the first"


def test_fires_away_from_a_dst_change_carry_no_note() -> None:
    fires = between("30 2 * * *", "Europe/Paris", "2027-03-25T12:00", "2027-03-27T12:00")
    assert [f.note for f in fires] == [None, None]


def test_sub_hourly_schedules_do_not_fire_inside_the_gap() -> None:
    fires = between("*/15 * * * *", "Europe/Paris", "2027-03-28T00:10", "2027-03-28T01:20")
    assert local(fires) == [
        "2027-03-28T01:15:00+01:00",
        "2027-03-28T01:30:00+01:00",
        "2027-03-28T01:45:00+01:00",
        "2027-03-28T03:00:00+02:00",
        "2027-03-28T03:15:00+02:00",
    ]
    assert at_utc(fires) == [
        "03-28 00:15:00",
        "03-28 00:30:00",
        "03-28 00:45:00",
        "03-28 01:00:00",
        "03-28 01:15:00",
    ]


def test_sub_hourly_schedules_fire_in_both_passes_of_the_repeated_hour() -> None:
    fires = between("*/15 * * * *", "Europe/Paris", "2027-10-30T23:50", "2027-10-31T01:50")
    assert at_utc(fires) == [f"10-31 0{h}:{m}:00" for h in (0, 1) for m in ("00", "15", "30", "45")]
    assert [f.local.strftime("%H:%M%z") for f in fires] == [
        f"02:{m}{zone}" for zone in ("+0200", "+0100") for m in ("00", "15", "30", "45")
    ]
    assert [f.note for f in fires] == [None] * 4 + [
        f"02:{m} again (DST fold): sub-hourly schedules follow elapsed time"
        for m in ("00", "15", "30", "45")
    ]


def test_fixed_time_fires_inside_one_gap_collapse_into_one() -> None:
    fires = between("0-50/10 2 * * *", "Europe/Paris", "2027-03-27T12:00", "2027-03-28T12:00")
    assert at_utc(fires) == ["03-28 01:00:00"]
    assert fires[0].note == "02:00 does not exist (DST gap): fires at 03:00, right after the gap"


def test_a_wildcard_minute_in_the_skipped_hour_does_not_fire_that_day() -> None:
    fires = between("*/10 2 * * *", "Europe/Paris", "2027-03-27T12:00", "2027-03-29T00:00")
    assert at_utc(fires) == ["03-29 00:00:00"]


@pytest.mark.parametrize(
    ("expression", "fixed"),
    [
        ("30 2 * * *", True),
        ("0,30 2 * * 1-5", True),
        ("0-50/10 2 * * *", True),
        ("0 30 2 * * *", True),
        ("@daily", True),
        ("*/10 2 * * *", False),
        ("0 */2 * * *", False),
        ("*/5 30 2 * * *", False),
        ("@hourly", False),
    ],
)
def test_fixed_time_means_no_star_leads_the_seconds_minute_or_hour(
    expression: str, fixed: bool
) -> None:
    assert CronSchedule.parse(expression).fixed_time is fixed


def test_lord_howe_half_hour_gap_moves_a_fixed_time_to_its_end() -> None:
    fires = between("15 2 * * *", "Australia/Lord_Howe", "2027-10-02T00:00", "2027-10-03T00:00")
    assert local(fires) == ["2027-10-03T02:30:00+11:00"]
    assert at_utc(fires) == ["10-02 15:30:00"]


def test_lord_howe_half_hour_fold_fires_a_fixed_time_once() -> None:
    fires = between("45 1 * * *", "Australia/Lord_Howe", "2027-04-03T00:00", "2027-04-04T00:00")
    assert local(fires) == ["2027-04-04T01:45:00+11:00"]


def test_lord_howe_half_hour_fold_repeats_sub_hourly_fires() -> None:
    fires = between("*/15 * * * *", "Australia/Lord_Howe", "2027-04-03T14:20", "2027-04-03T15:35")
    assert [f.local.strftime("%H:%M%z") for f in fires] == [
        "01:30+1100",
        "01:45+1100",
        "01:30+1030",
        "01:45+1030",
        "02:00+1030",
    ]


def test_lord_howe_half_hour_fold_replays_only_the_walls_it_repeats() -> None:
    fires = between("25 * * * *", "Australia/Lord_Howe", "2027-04-03T14:50", "2027-04-03T16:00")
    assert [f.local.strftime("%H:%M%z") for f in fires] == ["02:25+1030"]


def test_new_york_spring_forward_fires_at_three() -> None:
    fires = between("30 2 * * *", "America/New_York", "2027-03-13T12:00", "2027-03-14T12:00")
    assert local(fires) == ["2027-03-14T03:00:00-04:00"]


def test_new_york_fall_back_fires_at_the_first_half_past_one() -> None:
    fires = between("30 1 * * *", "America/New_York", "2027-11-06T12:00", "2027-11-07T12:00")
    assert local(fires) == ["2027-11-07T01:30:00-04:00"]


EQUIVALENTS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def test_every_nickname_has_a_five_field_equivalent() -> None:
    assert set(EQUIVALENTS) == set(NICKNAMES)


@pytest.mark.parametrize(("nickname", "fields"), EQUIVALENTS.items())
def test_a_nickname_fires_as_its_five_fields(nickname: str, fields: str) -> None:
    start, end = utc("2026-12-30T00:00"), utc("2029-01-01T00:00")
    expected = CronSchedule.parse(fields, "Europe/Paris").fires(start, end, 5)
    assert CronSchedule.parse(nickname, "Europe/Paris").fires(start, end, 5) == expected


def test_fires_excludes_start_and_includes_end() -> None:
    fires = between("0 * * * *", "UTC", "2027-01-01T10:00", "2027-01-01T13:00")
    assert at_utc(fires) == ["01-01 11:00:00", "01-01 12:00:00", "01-01 13:00:00"]


def test_fires_stops_at_the_limit() -> None:
    schedule = CronSchedule.parse("0 * * * *")
    fires = schedule.fires(utc("2027-01-01T10:00"), utc("2027-01-02T10:00"), 2)
    assert at_utc(fires) == ["01-01 11:00:00", "01-01 12:00:00"]
    assert schedule.fires(utc("2027-01-01T10:00"), utc("2027-01-02T10:00"), 0) == []


@pytest.mark.parametrize(
    ("expression", "period"), [("*/15 * * * *", 900.0), ("0 2 * * *", 86400.0)]
)
def test_period_is_the_gap_between_the_next_two_fires(expression: str, period: float) -> None:
    assert CronSchedule.parse(expression).period(utc("2027-01-01T10:07")) == period


def test_period_counts_elapsed_time_so_the_day_dst_starts_is_shorter() -> None:
    schedule = CronSchedule.parse("0 12 * * *", "Europe/Paris")
    assert schedule.period(utc("2027-03-27T00:00")) == 23 * HOUR


def test_parse_names_a_bad_expression() -> None:
    with pytest.raises(TriggerError, match=r"'61 \* \* \* \*'"):
        CronSchedule.parse("61 * * * *")


def test_parse_names_an_unknown_zone() -> None:
    with pytest.raises(TriggerError, match="unknown time zone 'Mars/Olympus_Mons'"):
        CronSchedule.parse("0 2 * * *", "Mars/Olympus_Mons")


def test_parse_rejects_a_date_that_never_comes() -> None:
    with pytest.raises(TriggerError, match=r"'0 0 31 2 \*' never fires"):
        CronSchedule.parse("0 0 31 2 *")


def test_schedules_are_equal_by_expression_and_zone() -> None:
    schedule = CronSchedule.parse("0 2 * * *", "Europe/Paris")
    assert schedule == CronSchedule("0 2 * * *", "Europe/Paris")
    assert schedule != CronSchedule("0 2 * * *", "UTC")
    assert len({schedule, CronSchedule("0 2 * * *", "Europe/Paris")}) == 1


NEAR_A_DST_CHANGE = st.builds(
    lambda change, offset: (change[0], utc(change[1]) + offset),
    st.sampled_from(DST_CHANGES),
    st.floats(-4 * HOUR, 3 * HOUR) | st.floats(-HOUR, HOUR),
)
ANYWHERE = st.tuples(
    st.sampled_from(["UTC", *dict(DST_CHANGES)]),
    st.floats(utc("2026-01-01T00:00"), utc("2028-12-31T00:00")),
)


@settings(deadline=None)
@given(
    st.sampled_from([*EXPRESSIONS, "*/7 * * * * *", "0 30 2 * * *", "@daily", "@weekly"]),
    NEAR_A_DST_CHANGE | ANYWHERE,
)
def test_next_fire_moves_strictly_forward_without_repeats(
    expression: str, zone_and_instant: tuple[str, float]
) -> None:
    zone, instant = zone_and_instant
    schedule = CronSchedule.parse(expression, zone)
    fires = [schedule.next_fire(instant)]
    for _ in range(30):
        fires.append(schedule.next_fire(fires[-1].at))
    assert fires[0].at > instant
    assert all(a.at < b.at for a, b in pairwise(fires))


def vixie_cron(expression: str, zone: str, start: float, end: float) -> list[float]:
    """What Vixie cron runs in (start, end]: it wakes every UTC minute and reads the local clock.

    After a jump forward it runs the fixed-time jobs of every skipped minute; while the clock
    repeats itself it runs only the wildcard jobs.
    """
    tz = ZoneInfo(zone)

    def clock(instant: float) -> datetime:
        return datetime.fromtimestamp(instant, tz).replace(tzinfo=None)

    walls = croniter(expression, clock(start) - timedelta(hours=3))
    matching = set()
    while (wall := walls.get_next(datetime)) <= clock(end) + timedelta(hours=3):
        matching.add(wall)
    fixed = CronSchedule.parse(expression, zone).fixed_time
    ran = []
    minute = (start // 60 + 1) * 60
    while minute <= end:
        now, before = clock(minute), clock(minute - 60)
        if not fixed:
            due = now in matching
        elif datetime.fromtimestamp(minute, tz).fold:
            due = False
        else:
            skipped = (now - before) // timedelta(minutes=1)
            due = any(before + timedelta(minutes=m) in matching for m in range(1, skipped + 1))
        if due:
            ran.append(minute)
        minute += 60
    return ran


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(EXPRESSIONS), NEAR_A_DST_CHANGE)
def test_fires_agree_with_a_minute_by_minute_vixie_cron(
    expression: str, zone_and_instant: tuple[str, float]
) -> None:
    zone, start = zone_and_instant
    end = start + 6 * HOUR
    fires = CronSchedule.parse(expression, zone).fires(start, end, 1000)
    assert [f.at for f in fires] == vixie_cron(expression, zone, start, end)
