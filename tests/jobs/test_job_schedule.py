"""Job schedules: the three forms, the minimum interval, words, and due times on a fixed grid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from palui.errors import ScheduleError
from palui.jobs.schedule import (
    ScheduleKind,
    describe,
    due_times,
    latest_due,
    load_schedule,
    next_due,
    parse_schedule,
)

NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)  # a Monday


def parse(text: str, tz: str = "UTC", minimum: int = 60):
    return parse_schedule(text, tz, now=NOW, min_interval_s=minimum)


def test_a_cron_expression_runs_in_the_persons_time_zone() -> None:
    schedule = parse("0 8 * * *", "Europe/Lisbon")
    assert schedule.kind is ScheduleKind.CRON
    assert describe(schedule) == "every day at 08:00 (Europe/Lisbon)"
    # Lisbon is UTC+0 in winter; New York is UTC-5.
    assert next_due(parse("0 8 * * *", "America/New_York"), NOW, NOW) == datetime(
        2026, 11, 30, 13, 0, tzinfo=UTC
    )


def test_cron_weekdays_count_from_sunday_as_in_crontab() -> None:
    sunday = next_due(parse("0 8 * * 0"), NOW, NOW)
    assert sunday is not None and sunday.strftime("%a") == "Sun"
    weekdays = parse("30 7 * * 1-5")
    assert describe(weekdays) == "every weekday at 07:30 (UTC)"
    saturday = NOW + timedelta(days=5)  # the next due time after Saturday morning is Monday
    upcoming = next_due(weekdays, NOW, saturday)
    assert upcoming is not None and upcoming.strftime("%a %H:%M") == "Mon 07:30"


def test_intervals_and_their_words() -> None:
    assert describe(parse("every 10m")) == "every 10 minutes"
    assert describe(parse("every 2h")) == "every 2 hours"
    assert describe(parse("Every 30s", minimum=1)) == "every 30 seconds"
    assert parse("every 90 minutes").seconds == 5400
    assert load_schedule("every 10m", "UTC").seconds == 600


def test_an_interval_under_the_minimum_is_refused_with_the_reason() -> None:
    with pytest.raises(ScheduleError, match=r"more often than the minimum \(1m\)"):
        parse("every 30s")
    with pytest.raises(ScheduleError, match="more often than the minimum"):
        parse("*/1 * * * *", minimum=120)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0 25 * * *", "not valid"),
        ("0 8 * *", "not a schedule I understand"),
        ("every 5 fortnights", "unknown unit"),
        ("every day", "every <number><unit>"),
        ("tomorrow-ish", "not a schedule I understand"),
        ("2020-01-01T09:00", "in the past"),
        ("", "empty"),
    ],
)
def test_a_bad_schedule_gets_a_plain_error_the_model_can_fix(text: str, says: str) -> None:
    with pytest.raises(ScheduleError, match=says):
        parse(text)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ScheduleError, match="not a time zone"):
        parse("0 8 * * *", "Mars/Olympus")


def test_a_single_run_is_read_in_the_persons_time_zone_unless_it_has_an_offset() -> None:
    local = parse("2026-12-01T09:00", "Europe/Berlin")
    assert local.kind is ScheduleKind.ONCE
    assert local.at == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    assert parse("2026-12-01T09:00+00:00", "Europe/Berlin").at == datetime(
        2026, 12, 1, 9, 0, tzinfo=UTC
    )
    assert describe(local) == "once, 2026-12-01 09:00 (Europe/Berlin)"


def test_due_times_lie_on_a_grid_every_process_computes_alike() -> None:
    hourly = parse("every 1h")
    anchor = NOW - timedelta(hours=3, minutes=30)
    missed = due_times(hourly, anchor, anchor, NOW)
    assert missed == [anchor + timedelta(hours=k) for k in (1, 2, 3)]
    assert latest_due(hourly, anchor, NOW) == missed[-1]
    assert due_times(hourly, anchor, missed[-1], NOW) == []
    daily = parse("0 8 * * *")
    assert len(due_times(daily, NOW, NOW - timedelta(days=3), NOW)) == 3
    assert latest_due(daily, NOW, NOW) == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def test_the_persons_time_zone_setting_must_be_a_real_zone(monkeypatch) -> None:
    from palui.config import load_settings
    from palui.errors import ConfigError

    monkeypatch.setenv("PALUI_TIMEZONE", "Europe/Lisbon")
    assert load_settings().timezone == "Europe/Lisbon"
    monkeypatch.setenv("PALUI_TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match=r"PALUI_TIMEZONE.*not an IANA time zone"):
        load_settings()
