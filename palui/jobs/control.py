"""Pausing, resuming and deleting a job, wherever a person does it: the `/jobs` cards in the
chat (`palui.interact.job_sheet`) and the web console's Jobs page (`palui.web`).

Every change is saved first and then the scheduler is told (`jobs_changed`: it re-reads the jobs
table), so both places follow the same rules: a one-time job that ran can't be resumed, and a
deleted job's queued runs go with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from palui.db import Store
from palui.domain import JobRecord, RunRecord
from palui.jobs.view import is_once
from palui.logs import get_logger

log = get_logger("palui.jobs")

JobsChanged = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Switched:
    job: JobRecord | None  # the job as saved; None when nothing changed
    refusal: str | None = None  # why not, in words for the person


class JobControl:
    def __init__(self, store: Store, jobs_changed: JobsChanged | None = None) -> None:
        self._store = store
        self._jobs_changed = jobs_changed  # the scheduler's sync

    async def last_run(self, job: JobRecord) -> RunRecord | None:
        return (await self._store.jobs.last_runs([job.id])).get(job.id)

    async def set_enabled(self, job: JobRecord, enabled: bool, *, by: str) -> Switched:
        """Pause or resume a job."""
        if enabled and is_once(job) and (await self.last_run(job)) is not None:
            return Switched(None, "A one-time job that ran can't be resumed.")
        updated = await self._store.jobs.set_enabled(job.id, enabled)
        if updated is None:
            return Switched(None, "That job is gone.")
        log.info("job_switched", job_id=job.id, enabled=updated.enabled, by=by)
        await self._changed()
        return Switched(updated)

    async def delete(self, job: JobRecord, *, by: str) -> bool:
        deleted = await self._store.jobs.delete(job.id)
        log.info("job_deleted", job_id=job.id, by=by)
        await self._changed()
        return deleted

    async def _changed(self) -> None:
        if self._jobs_changed is not None:
            await self._jobs_changed()
