"""A job's schedule: parsed from what the model or the person wrote, described in words, and
turned into due times.

Three forms (DESIGN §1.10): a 5-field cron expression (`0 8 * * *`, standard crontab weekdays,
0 or 7 = Sunday) in the person's time zone, an interval (`every 10m`, `every 2h`, `every 30s`),
or an ISO date-time for a single run (in the person's time zone unless it carries an offset).

Due times lie on a fixed grid, so every process computes the same ones: cron and one-time
schedules are whole seconds; an interval counts from the job's anchor (its creation time, to the
second). That grid is what makes the (job, scheduled time) claim unique across processes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from palui.errors import ScheduleError

INTERVAL_RE = re.compile(r"^every\s+(\d+)\s*([a-z]+)$")
# Laid out by hand as a table, one unit a row.
UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}  # fmt: skip
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_NAMES = {
    "sun": "Sunday", "mon": "Monday", "tue": "Tuesday", "wed": "Wednesday",
    "thu": "Thursday", "fri": "Friday", "sat": "Saturday",
}  # fmt: skip
MAX_DUE = 10_000  # due times counted at most (a long outage of a frequent job)
ONE_US = timedelta(microseconds=1)


class ScheduleKind(StrEnum):
    CRON = "cron"
    INTERVAL = "interval"
    ONCE = "once"


@dataclass(frozen=True, slots=True)
class Schedule:
    kind: ScheduleKind
    text: str  # normalised: "0 8 * * *", "every 10m", an ISO date-time in UTC
    timezone: str
    seconds: int = 0  # interval length
    at: datetime | None = None  # the one run, UTC

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


def check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"{name!r} is not a time zone I know. Use an IANA name such as Europe/Lisbon or UTC."
        ) from None
    return name


def _cron_weekdays(field: str) -> str:
    """Standard crontab weekday numbers (0 = Sunday) as names, which APScheduler 3 reads right."""

    def name(match: re.Match[str]) -> str:
        number = int(match.group())
        if number > 7:
            raise ScheduleError(f"weekday {number} is out of range (0-7, 0 and 7 are Sunday)")
        return WEEKDAYS[number]

    parts = []
    for part in field.split(","):
        base, slash, step = part.partition("/")
        parts.append(re.sub(r"\d+", name, base) + slash + step)
    return ",".join(parts)


def cron_trigger(expression: str, timezone: str) -> CronTrigger:
    fields = expression.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"a cron expression has 5 fields (minute hour day month weekday), this one has "
            f"{len(fields)}; e.g. '0 8 * * *' is every day at 08:00"
        )
    minute, hour, day, month, weekday = fields
    try:
        return CronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=_cron_weekdays(weekday),
            timezone=ZoneInfo(timezone),
        )
    except ValueError as exc:
        raise ScheduleError(f"the cron expression {expression!r} is not valid ({exc})") from None


def parse_schedule(text: str, timezone: str, *, now: datetime, min_interval_s: int) -> Schedule:
    """A schedule from its text; ScheduleError with a fix the model can apply."""
    check_timezone(timezone)
    raw = " ".join(text.strip().split())
    lowered = raw.lower()
    if not raw:
        raise ScheduleError("the schedule is empty; use e.g. '0 8 * * *', 'every 2h' or a date")
    interval = INTERVAL_RE.match(lowered)
    if interval:
        count, unit = int(interval.group(1)), interval.group(2)
        if unit not in UNITS:
            raise ScheduleError(f"unknown unit {unit!r}; use s, m, h or d (e.g. 'every 10m')")
        seconds = count * UNITS[unit]
        _check_often(seconds, min_interval_s)
        return Schedule(ScheduleKind.INTERVAL, f"every {_short(seconds)}", timezone, seconds)
    if lowered.startswith("every"):
        raise ScheduleError("write an interval as 'every <number><unit>', e.g. 'every 10m'")
    if len(raw.split()) == 5:
        trigger = cron_trigger(raw, timezone)
        _check_often(_smallest_gap(trigger, now), min_interval_s)
        return Schedule(ScheduleKind.CRON, raw, timezone)
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise ScheduleError(
            f"{raw!r} is not a schedule I understand. Use a 5-field cron expression "
            "('0 8 * * *'), an interval ('every 10m', 'every 2h') or an ISO date-time "
            "('2026-12-01T09:00')"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=ZoneInfo(timezone))
    at = at.astimezone(UTC).replace(microsecond=0)
    if at <= now:
        raise ScheduleError(f"{raw} is in the past; give a time after {_local(now, timezone)}")
    return Schedule(ScheduleKind.ONCE, at.isoformat(), timezone, at=at)


def load_schedule(text: str, timezone: str) -> Schedule:
    """A stored schedule (already checked when it was made)."""
    if text.startswith("every "):
        count, unit = INTERVAL_RE.match(text).groups()  # type: ignore[union-attr]
        return Schedule(ScheduleKind.INTERVAL, text, timezone, int(count) * UNITS[unit])
    if len(text.split()) == 5:
        return Schedule(ScheduleKind.CRON, text, timezone)
    return Schedule(ScheduleKind.ONCE, text, timezone, at=datetime.fromisoformat(text))


def _check_often(seconds: float, min_interval_s: int) -> None:
    if seconds < min_interval_s:
        raise ScheduleError(
            f"that runs every {_short(int(seconds))}, more often than the minimum "
            f"({_short(min_interval_s)}) the operator allows; choose a longer interval"
        )


def _smallest_gap(trigger: CronTrigger, now: datetime) -> float:
    times: list[datetime] = []
    cursor = now
    for _ in range(50):
        fire = trigger.get_next_fire_time(None, cursor)
        if fire is None:
            break
        times.append(fire)
        cursor = fire + ONE_US
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    return min(gaps, default=float("inf"))


def _short(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _local(moment: datetime, timezone: str) -> str:
    return moment.astimezone(ZoneInfo(timezone)).strftime("%Y-%m-%d %H:%M")


# -- due times -----------------------------------------------------------------------------------


def trigger(schedule: Schedule, anchor: datetime) -> BaseTrigger:
    """The APScheduler trigger that fires on the schedule's grid."""
    if schedule.kind is ScheduleKind.INTERVAL:
        start = anchor + timedelta(seconds=schedule.seconds)
        return IntervalTrigger(seconds=schedule.seconds, start_date=start, timezone=UTC)
    if schedule.kind is ScheduleKind.CRON:
        return cron_trigger(schedule.text, schedule.timezone)
    assert schedule.at is not None
    return DateTrigger(run_date=schedule.at, timezone=UTC)


def due_times(
    schedule: Schedule, anchor: datetime, after: datetime, until: datetime
) -> list[datetime]:
    """Due times in (after, until], oldest first (at most MAX_DUE, the newest kept)."""
    if schedule.kind is ScheduleKind.INTERVAL:
        step = timedelta(seconds=schedule.seconds)
        first = max(int((after - anchor) / step) + 1, 1)
        last = int((until - anchor) / step)
        ks = range(max(first, last - MAX_DUE + 1), last + 1)
        return [anchor + k * step for k in ks]
    if schedule.kind is ScheduleKind.ONCE:
        assert schedule.at is not None
        return [schedule.at] if after < schedule.at <= until else []
    found: list[datetime] = []
    cron = cron_trigger(schedule.text, schedule.timezone)
    cursor = after + ONE_US
    while (fire := cron.get_next_fire_time(None, cursor)) is not None and fire <= until:
        found.append(fire.astimezone(UTC))
        found = found[-MAX_DUE:]
        cursor = fire + ONE_US
    return found


def latest_due(schedule: Schedule, anchor: datetime, now: datetime) -> datetime | None:
    """The newest due time not after `now` (what a fire right now is for)."""
    if schedule.kind is ScheduleKind.CRON:
        # Look back in widening windows, so a frequent cron is not walked through a whole year.
        for days in (1 / 24, 1, 32, 400):
            times = due_times(schedule, anchor, now - timedelta(days=days), now)
            if times:
                return times[-1]
        return None
    if schedule.kind is ScheduleKind.ONCE:
        return schedule.at if schedule.at is not None and schedule.at <= now else None
    times = due_times(schedule, anchor, anchor, now)
    return times[-1] if times else None


def next_due(schedule: Schedule, anchor: datetime, now: datetime) -> datetime | None:
    fire = trigger(schedule, anchor).get_next_fire_time(None, now + ONE_US)
    return fire.astimezone(UTC) if fire is not None else None


# -- words ---------------------------------------------------------------------------------------


def describe(schedule: Schedule) -> str:
    """ "every day at 08:00 (Europe/Lisbon)", "every 10 minutes", "once, 2026-12-01 09:00 (UTC)" """
    if schedule.kind is ScheduleKind.INTERVAL:
        return "every " + _words(schedule.seconds)
    if schedule.kind is ScheduleKind.ONCE:
        assert schedule.at is not None
        return f"once, {_local(schedule.at, schedule.timezone)} ({schedule.timezone})"
    return f"{_cron_words(schedule.text)} ({schedule.timezone})"


def _words(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and seconds >= size:
            count = seconds // size
            return unit if count == 1 else f"{count} {unit}s"
    return "second" if seconds == 1 else f"{seconds} seconds"


def _cron_words(expression: str) -> str:
    minute, hour, day, month, weekday = expression.split()
    if minute.isdigit() and hour.isdigit():
        at = f"at {int(hour):02d}:{int(minute):02d}"
        if (day, month, weekday) == ("*", "*", "*"):
            return f"every day {at}"
        if (day, month) == ("*", "*"):
            names = _cron_weekdays(weekday)
            days = {"mon-fri": "weekday", "sat,sun": "weekend day"}.get(names)
            if days is None and re.fullmatch(r"[a-z]{3}(,[a-z]{3})*", names):
                days = ", ".join(DAY_NAMES[n] for n in names.split(","))
            if days:
                return f"every {days} {at}"
        if day.isdigit() and (month, weekday) == ("*", "*"):
            return f"on day {day} of every month {at}"
    if (hour, day, month, weekday) == ("*", "*", "*", "*"):
        if minute.isdigit():
            return f"every hour at :{int(minute):02d}"
        step = re.fullmatch(r"\*/(\d+)", minute)
        if step:
            return f"every {_words(int(step.group(1)) * 60)}"
    return f"on the cron schedule {expression}"
