"""The cap check is pure: given the day's tokens and the hour's runs, which cap stops a turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from palui.chat.caps import CapCounts, Caps, cap_hit

NOW = datetime(2026, 12, 1, 22, 30, tzinfo=UTC)


def test_no_cap_is_hit_below_both_limits() -> None:
    assert cap_hit(Caps(1000, 5), CapCounts(999, 4, NOW), NOW) is None


def test_a_cap_of_zero_is_off() -> None:
    assert cap_hit(Caps(0, 0), CapCounts(10**9, 10**6, NOW), NOW) is None


def test_the_token_cap_lifts_at_the_next_utc_midnight() -> None:
    hit = cap_hit(Caps(1000, 0), CapCounts(1000, 0, None), NOW)
    assert hit is not None and hit.cap == "daily_token_cap"
    assert hit.lifts_at == datetime(2026, 12, 2, tzinfo=UTC)
    assert "(1,000) is used up" in hit.message and "in 1 h 30 min" in hit.message


def test_the_run_cap_lifts_an_hour_after_the_oldest_run_in_the_window() -> None:
    oldest = NOW - timedelta(minutes=50)
    hit = cap_hit(Caps(0, 3), CapCounts(0, 3, oldest), NOW)
    assert hit is not None and hit.cap == "runs_per_hour"
    assert hit.lifts_at == oldest + timedelta(hours=1)
    assert "Paused: 3 runs in the last hour (the limit is 3)" in hit.message


def test_the_token_cap_is_named_first_when_both_are_hit() -> None:
    hit = cap_hit(Caps(10, 1), CapCounts(10, 1, NOW), NOW)
    assert hit is not None and hit.cap == "daily_token_cap"
