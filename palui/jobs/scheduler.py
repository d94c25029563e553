"""The timing of scheduled jobs: APScheduler fires, the database decides.

The database is the source of truth: jobs are loaded at start, re-read whenever one is created,
paused, resumed or deleted here, and every `sync_every_s` (to see other processes' changes).
A fire claims its run by inserting the unique (job, due time) row and only then asks the chat's
worker to run it (`on_due`), so with several processes each due run starts once.

At start, due times that passed while Palui was down are coalesced: within the misfire grace
they become one run (and the chat is told how many were missed); older ones are recorded as
missed and the chat is told they did not run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from palui.db import Store
from palui.domain import EVERY_CHAT, ChatScope, JobRecord, RunStatus
from palui.jobs.schedule import ScheduleKind, due_times, latest_due, load_schedule, trigger
from palui.jobs.view import next_run, when
from palui.logs import get_logger

log = get_logger("palui.jobs")

ON_TIME_S = 5.0  # a run that fell due this recently at start is simply late, not missed


def _now() -> datetime:
    return datetime.now(UTC)


def _ago(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _runs(count: int) -> str:
    return "1 run was" if count == 1 else f"{count:,} runs were"


class JobScheduler:
    def __init__(
        self,
        store: Store,
        *,
        on_due: Callable[[int], None],
        misfire_grace_s: float = 3600,
        sync_every_s: float = 30,
        now: Callable[[], datetime] = _now,
        scope: ChatScope = EVERY_CHAT,
    ) -> None:
        self._store = store
        self._scope = scope  # jobs of chats outside it are never claimed here
        self._on_due = on_due  # a run of this chat is queued: wake its worker
        self._grace_s = misfire_grace_s
        self._sync_every_s = sync_every_s
        self._now = now
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._known: dict[int, tuple[str, str, datetime]] = {}  # job id -> what it was added as

    async def start(self) -> None:
        await self.catch_up()
        await self.sync()
        self._scheduler.add_job(
            self.sync,
            IntervalTrigger(seconds=self._sync_every_s, timezone=UTC),
            id="palui-sync",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
        self._scheduler.start()
        log.info("scheduler_started", jobs=len(self._known))

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    async def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    # -- the database is the source of truth ------------------------------------------------------

    async def sync(self) -> None:
        """Follow the jobs table: add new and changed jobs, drop paused and deleted ones."""
        try:
            jobs = {job.id: job for job in await self._served_jobs() if job.enabled}
        except Exception:
            log.exception("jobs_sync_failed")
            return
        for job_id in list(self._known):
            job = jobs.get(job_id)
            if job is None or self._known[job_id] != _signature(job):
                del self._known[job_id]
                if self._scheduler.get_job(f"job-{job_id}") is not None:
                    self._scheduler.remove_job(f"job-{job_id}")
        for job in jobs.values():
            if job.id in self._known:
                continue
            schedule = load_schedule(job.schedule, job.timezone)
            self._scheduler.add_job(
                self._fire,
                trigger(schedule, job.anchor_at),
                args=[job.id],
                id=f"job-{job.id}",
                coalesce=True,
                max_instances=3,
                misfire_grace_time=None,
                replace_existing=True,
            )
            self._known[job.id] = _signature(job)

    async def _fire(self, job_id: int) -> None:
        try:
            await self._claim_due(job_id)
        except Exception:  # the next fire (or another process) tries again
            log.exception("job_fire_failed", job_id=job_id)

    async def _claim_due(self, job_id: int) -> None:
        job = await self._store.jobs.get(job_id)
        if job is None or not job.enabled:
            return  # deleted or paused meanwhile (perhaps by another process)
        schedule = load_schedule(job.schedule, job.timezone)
        due = latest_due(schedule, job.anchor_at, self._now())
        if due is None:
            return
        once = schedule.kind is ScheduleKind.ONCE
        if await self._store.jobs.claim_run(job, due, finish_job=once):
            log.info("job_run_claimed", job_id=job.id, scheduled_for=due.isoformat())
            self._on_due(job.chat_id)
        else:
            log.info("job_run_taken_elsewhere", job_id=job.id, scheduled_for=due.isoformat())

    # -- after a downtime -------------------------------------------------------------------------

    async def catch_up(self) -> None:
        """Runs missed while Palui was down: one run for them all, or a note that they're lost."""
        now = self._now()
        for job in await self._served_jobs():
            if job.enabled:
                await self._catch_up_job(job, now)

    async def _served_jobs(self) -> list[JobRecord]:
        return [job for job in await self._store.jobs.all() if self._scope.serves(job.chat_id)]

    async def _catch_up_job(self, job: JobRecord, now: datetime) -> None:
        schedule = load_schedule(job.schedule, job.timezone)
        last = await self._store.jobs.last_scheduled_for(job.id)
        # Due times before the job was last resumed belong to its pause, not to a downtime.
        after = max(moment for moment in (last, job.updated_at, job.anchor_at) if moment)
        missed = due_times(schedule, job.anchor_at, after, now)
        if not missed:
            return
        newest, count = missed[-1], len(missed)
        late_s = (now - newest).total_seconds()
        once = schedule.kind is ScheduleKind.ONCE
        if late_s <= self._grace_s:
            note = None
            if count > 1 or late_s > ON_TIME_S:
                running = "running it now" if count == 1 else "running once now"
                note = f"⏰ Job #{job.id}: {_runs(count)} missed while Palui was down; {running}."
            if await self._store.jobs.claim_run(
                job, newest, missed=count, note=note, finish_job=once
            ):
                log.info("job_runs_coalesced", job_id=job.id, missed=count)
                self._on_due(job.chat_id)
            return
        upcoming = None if once else next_run(job, now)
        following = f" Next run: {when(upcoming, job.timezone, now)}." if upcoming else ""
        note = (
            f"⏰ Job #{job.id}: {_runs(count)} missed while Palui was down, the last "
            f"{_ago(late_s)} ago. That is past the {_ago(self._grace_s)} grace, so it did not "
            f"run.{following}"
        )
        if await self._store.jobs.claim_run(
            job, newest, status=RunStatus.MISSED, missed=count, note=note, finish_job=once
        ):
            log.info("job_runs_missed", job_id=job.id, missed=count)
            self._on_due(job.chat_id)


def _signature(job: JobRecord) -> tuple[str, str, datetime]:
    return (job.schedule, job.timezone, job.anchor_at)
