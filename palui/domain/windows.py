"""The time windows the caps count in: a UTC day, and the last hour."""

from __future__ import annotations

from datetime import datetime, timedelta


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def hour_ago(now: datetime) -> datetime:
    return now - timedelta(hours=1)
