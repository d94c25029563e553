"""The job scheduler against the database alone: claims are unique, downtime is caught up once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from palui.db.models import JobRow
from palui.jobs.scheduler import JobScheduler
from tests.conftest import OWNER_CHAT


async def _job(store, schedule: str, anchor: datetime):
    job = await store.jobs.create(OWNER_CHAT, "p", schedule, "UTC", 1000, "test", anchor)
    async with store.db.session() as s, s.begin():
        await s.execute(update(JobRow).values(created_at=anchor, updated_at=anchor))
    return job


async def test_two_schedulers_firing_the_same_due_time_claim_it_once(store) -> None:
    anchor = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=90)
    job = await _job(store, "every 1m", anchor)
    woken: list[int] = []
    first = JobScheduler(store, on_due=woken.append)
    second = JobScheduler(store, on_due=woken.append)
    await first._fire(job.id)
    await second._fire(job.id)
    runs = await store.jobs.runs(job.id)
    assert [run.scheduled_for for run in runs] == [anchor + timedelta(minutes=1)]
    assert woken == [OWNER_CHAT]


async def test_runs_missed_past_the_grace_are_recorded_and_told_once(store) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    job = await _job(store, "every 1h", now - timedelta(hours=5, minutes=30))
    woken: list[int] = []
    scheduler = JobScheduler(store, on_due=woken.append, misfire_grace_s=600)
    await scheduler.catch_up()
    await scheduler.catch_up()  # a second process starting: nothing new
    [run] = await store.jobs.runs(job.id)
    assert (run.status, run.missed) == ("missed", 5)
    [note] = await store.outbox.pending(OWNER_CHAT)
    assert note.text.startswith(
        f"⏰ Job #{job.id}: 5 runs were missed while Palui was down, the last"
    )
    assert "past the 10 min grace, so it did not run. Next run: " in note.text
    assert woken == [OWNER_CHAT]
    assert await store.jobs.queued() == []


async def test_a_paused_jobs_due_times_are_not_counted_as_missed(store) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    job = await _job(store, "every 1h", now - timedelta(hours=5, minutes=30))
    await store.jobs.set_enabled(job.id, False)
    await store.jobs.set_enabled(job.id, True)  # resumed just now
    woken: list[int] = []
    await JobScheduler(store, on_due=woken.append).catch_up()
    assert await store.jobs.runs(job.id) == [] and woken == []
