"""Whether a claimed run may start: its job still exists, no newer run of it is queued behind
it (runs that piled up behind a long turn are coalesced into the newest), and the job is within
its own token cap.

A job over its per-job daily cap skips the run and says so once per job per (UTC) day; other
jobs and chats are not affected.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from palui.db import Store
from palui.domain import JobRecord, RunRecord, RunStatus
from palui.domain.windows import day_start
from palui.jobs.view import is_once
from palui.logs import get_logger

log = get_logger("palui.jobs")


async def admit_run(store: Store, run: RunRecord, now: datetime) -> JobRecord | None:
    """The run's job when the run may start; None when it was skipped (the chat told once)."""
    job = await store.jobs.get(run.job_id)
    if job is None:
        await store.jobs.skip_run(run.id, None, run.chat_id)
        return None
    if not job.enabled and not is_once(job):  # paused after this run was claimed
        await store.jobs.skip_run(run.id, None, run.chat_id)
        return None
    if await store.jobs.has_newer_queued(run):
        # Runs that queued up behind a long turn are one run: the newest.
        await store.jobs.skip_run(run.id, None, run.chat_id, RunStatus.COALESCED)
        return None
    used = await store.jobs.tokens_since(job.id, day_start(now))
    if used < job.daily_token_cap:
        return job
    day = now.date().isoformat()
    note = None
    if await store.jobs.first_cap_notice(job.id, day):
        resets = day_start(now) + timedelta(days=1)
        note = (
            f"⏸ Job #{job.id} skipped its run: it has used its daily token cap "
            f"({job.daily_token_cap:,} tokens) today. It runs again after {resets:%H:%M} UTC "
            "tomorrow; other jobs and your messages are not affected."
        )
    await store.jobs.skip_run(run.id, note, run.chat_id)
    log.info("job_run_skipped", job_id=job.id, reason="job_token_cap", used=used)
    return None
