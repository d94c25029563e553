"""The time windows the caps count in: a UTC day, and the last hour."""

from __future__ import annotations

from datetime import datetime, timedelta


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def hour_ago(now: datetime) -> datetime:
    return now - timedelta(hours=1)


def days_back(now: datetime, days: int) -> list[datetime]:
    """The starts of the last `days` UTC days, oldest first; the last is today's (the cap's)."""
    today = day_start(now)
    return [today - timedelta(days=n) for n in range(days - 1, -1, -1)]


def hours_back(now: datetime, hours: int) -> list[datetime]:
    """The starts of the last `hours` hour-long windows ending now, oldest first; the last is
    the runs cap's window (`hour_ago`)."""
    return [now - timedelta(hours=n) for n in range(hours, 0, -1)]
