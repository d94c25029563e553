"""How a job reads to people and to the model: its schedule in words, next and last run."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from palui.domain import JobRecord, RunRecord, RunStatus, TurnStatus
from palui.jobs.schedule import ScheduleKind, describe, load_schedule, next_due


def when(moment: datetime, timezone: str, now: datetime) -> str:
    """ "today 08:00", "Tue 1 Dec 08:00" in the person's time zone."""
    local, today = moment.astimezone(ZoneInfo(timezone)), now.astimezone(ZoneInfo(timezone))
    if local.date() == today.date():
        return f"today {local:%H:%M:%S}" if local.second else f"today {local:%H:%M}"
    return f"{local:%a} {local.day} {local:%b %H:%M}"


def next_run(job: JobRecord, now: datetime) -> datetime | None:
    if not job.enabled:
        return None
    return next_due(load_schedule(job.schedule, job.timezone), job.anchor_at, now)


def schedule_words(job: JobRecord) -> str:
    return describe(load_schedule(job.schedule, job.timezone))


def is_once(job: JobRecord) -> bool:
    return load_schedule(job.schedule, job.timezone).kind is ScheduleKind.ONCE


def run_outcome(run: RunRecord) -> str:
    """What became of a run: its turn's status once it started."""
    if run.status == RunStatus.STARTED:
        words = {
            TurnStatus.AWAITING_APPROVAL: "waiting for approval",
            TurnStatus.CANCELLED: "stopped",
        }
        status = run.turn_status
        return words.get(status, status) if status else "started"  # done, running, failed
    return {
        RunStatus.QUEUED: "about to run",
        RunStatus.SKIPPED: "skipped (over its token cap)",
        RunStatus.MISSED: "missed while Palui was down",
        RunStatus.COALESCED: "merged into a later run",
    }.get(run.status, run.status)


def last_run_words(run: RunRecord | None, timezone: str, now: datetime) -> str:
    if run is None:
        return "not yet"
    return f"{when(run.scheduled_for, timezone, now)} — {run_outcome(run)}"


def job_line(job: JobRecord, now: datetime) -> str:
    """One line per job for the model (palui__list_jobs)."""
    state = "on" if job.enabled else "off"
    upcoming = next_run(job, now)
    following = f"; next run {when(upcoming, job.timezone, now)}" if upcoming else ""
    return (
        f"#{job.id} [{state}] {schedule_words(job)}{following}; token cap "
        f"{job.daily_token_cap:,}/day; prompt: {job.prompt}"
    )


def job_prompt(job: JobRecord) -> str:
    """What a job's run asks the model (the person is not there to answer questions)."""
    return (
        f"This is a run of scheduled job #{job.id} ({schedule_words(job)}), set up earlier in "
        "this chat. Do what it asks and answer with the result for the user; they will read it "
        f"later, so don't ask questions back.\n\nThe job: {job.prompt}"
    )
