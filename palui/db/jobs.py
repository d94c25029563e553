"""Scheduled jobs and their runs.

A run is claimed by inserting its unique (job_id, scheduled_for) row before anything starts; a
conflict means another process (or another fire) has it. A claimed run is `queued` until its
chat's worker moves it to `started` with a conditional update, so it also starts once; after a
crash a `started` run is never started again.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from palui.db.models import Chat, JobRow, JobRun, ModelCall, OutboxMessage, Turn, utcnow
from palui.db.repo import Repo
from palui.domain import JobRecord, RunRecord, RunStatus, TurnStatus


def _job(row: JobRow) -> JobRecord:
    return JobRecord(
        row.id,
        row.token,
        row.chat_id,
        row.prompt,
        row.schedule,
        row.timezone,
        row.enabled,
        row.daily_token_cap,
        row.anchor_at,
        row.created_by,
        row.created_at,
        row.updated_at,
        row.taint_source,
        row.model,
        row.owner_id,
    )


def _run(row: JobRun, turn_status: str | None = None) -> RunRecord:
    return RunRecord(
        row.id,
        row.job_id,
        row.chat_id,
        row.scheduled_for,
        RunStatus(row.status),
        row.missed,
        row.turn_id,
        None if turn_status is None else TurnStatus(turn_status),
    )


class JobRepo(Repo):
    async def create(
        self,
        chat_id: int,
        prompt: str,
        schedule: str,
        timezone: str,
        daily_token_cap: int,
        created_by: str,
        anchor_at: datetime,
        taint_source: str | None = None,  # the source of the tainted turn that made it
        owner_id: int | None = None,  # the person whose message started that turn
    ) -> JobRecord:
        """A job keeps the model its chat had chosen (/model) when it was made."""
        now = utcnow()
        async with self._db.session() as s, s.begin():
            model = await s.scalar(select(Chat.model).where(Chat.id == chat_id))
            row = JobRow(
                model=model,
                token=secrets.token_hex(8),
                chat_id=chat_id,
                prompt=prompt,
                schedule=schedule,
                timezone=timezone,
                enabled=True,
                daily_token_cap=daily_token_cap,
                anchor_at=anchor_at,
                created_by=created_by[:160],
                created_at=now,
                updated_at=now,
                taint_source=taint_source[:160] if taint_source else None,
                owner_id=owner_id,
            )
            s.add(row)
            await s.flush()
            return _job(row)

    async def get(self, job_id: int) -> JobRecord | None:
        async with self._db.session() as s:
            row = await s.get(JobRow, job_id)
            return _job(row) if row is not None else None

    async def by_token(self, token: str) -> JobRecord | None:
        async with self._db.session() as s:
            row = await s.scalar(select(JobRow).where(JobRow.token == token))
            return _job(row) if row is not None else None

    async def all(self, chat_id: int | None = None) -> list[JobRecord]:
        query = select(JobRow).order_by(JobRow.id)
        if chat_id is not None:
            query = query.where(JobRow.chat_id == chat_id)
        async with self._db.session() as s:
            return [_job(row) for row in await s.scalars(query)]

    async def set_enabled(self, job_id: int, enabled: bool) -> JobRecord | None:
        async with self._db.session() as s, s.begin():
            row = await s.get(JobRow, job_id)
            if row is None:
                return None
            row.enabled = enabled
            row.updated_at = utcnow()
            await s.flush()
            return _job(row)

    async def delete(self, job_id: int) -> bool:
        """Delete a job; its queued runs go with it (a started run finishes)."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(delete(JobRow).where(JobRow.id == job_id))
            await s.execute(
                delete(JobRun).where(JobRun.job_id == job_id, JobRun.status == RunStatus.QUEUED)
            )
        return bool(getattr(result, "rowcount", 0))

    # -- runs ------------------------------------------------------------------------------------

    async def claim_run(
        self,
        job: JobRecord,
        scheduled_for: datetime,
        *,
        status: RunStatus = RunStatus.QUEUED,
        missed: int = 0,
        note: str | None = None,
        finish_job: bool = False,
    ) -> bool:
        """Insert the run's row; False when it was there already (someone else has it). The
        chat's note (if any) goes into the outbox in the same transaction, so it is sent once."""
        try:
            async with self._db.session() as s, s.begin():
                s.add(
                    JobRun(
                        job_id=job.id,
                        chat_id=job.chat_id,
                        scheduled_for=scheduled_for,
                        status=status,
                        missed=missed,
                        claimed_at=utcnow(),
                    )
                )
                await s.flush()
                if note:
                    s.add(OutboxMessage(chat_id=job.chat_id, text=note))
                if finish_job:  # a one-time job is done once its run is claimed
                    await s.execute(
                        update(JobRow)
                        .where(JobRow.id == job.id)
                        .values(enabled=False, updated_at=utcnow())
                    )
        except IntegrityError:
            return False
        return True

    async def last_scheduled_for(self, job_id: int) -> datetime | None:
        async with self._db.session() as s:
            return await s.scalar(
                select(func.max(JobRun.scheduled_for)).where(JobRun.job_id == job_id)
            )

    async def last_runs(self, job_ids: Sequence[int]) -> dict[int, RunRecord]:
        """Each job's newest run, with its turn's status."""
        if not job_ids:
            return {}
        newest = (
            select(func.max(JobRun.id))
            .where(JobRun.job_id.in_(list(job_ids)))
            .group_by(JobRun.job_id)
            .scalar_subquery()
        )
        async with self._db.session() as s:
            rows = await s.execute(
                select(JobRun, Turn.status)
                .outerjoin(Turn, Turn.id == JobRun.turn_id)
                .where(JobRun.id.in_(newest))
            )
            return {run.job_id: _run(run, status) for run, status in rows.all()}

    async def runs(self, job_id: int) -> list[RunRecord]:
        async with self._db.session() as s:
            rows = await s.execute(
                select(JobRun, Turn.status)
                .outerjoin(Turn, Turn.id == JobRun.turn_id)
                .where(JobRun.job_id == job_id)
                .order_by(JobRun.scheduled_for)
            )
            return [_run(run, status) for run, status in rows.all()]

    async def job_of_turn(self, turn_id: str) -> int | None:
        """The job whose run the turn is (None for other turns)."""
        async with self._db.session() as s:
            return await s.scalar(select(JobRun.job_id).where(JobRun.turn_id == turn_id))

    async def queued(self, chat_id: int | None = None) -> list[RunRecord]:
        query = select(JobRun).where(JobRun.status == RunStatus.QUEUED)
        if chat_id is not None:
            query = query.where(JobRun.chat_id == chat_id)
        async with self._db.session() as s:
            return [_run(row) for row in await s.scalars(query.order_by(JobRun.id))]

    async def start_run(self, run_id: int, turn_id: str) -> bool:
        """queued -> started, once: False when another worker started (or dropped) it."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(JobRun)
                .where(JobRun.id == run_id, JobRun.status == RunStatus.QUEUED)
                .values(status=RunStatus.STARTED, turn_id=turn_id, started_at=utcnow())
            )
        return bool(getattr(result, "rowcount", 0))

    async def has_newer_queued(self, run: RunRecord) -> bool:
        async with self._db.session() as s:
            newer = await s.scalar(
                select(JobRun.id)
                .where(
                    JobRun.job_id == run.job_id,
                    JobRun.status == RunStatus.QUEUED,
                    JobRun.scheduled_for > run.scheduled_for,
                )
                .limit(1)
            )
        return newer is not None

    async def skip_run(
        self, run_id: int, note: str | None, chat_id: int, status: RunStatus = RunStatus.SKIPPED
    ) -> bool:
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(JobRun)
                .where(JobRun.id == run_id, JobRun.status == RunStatus.QUEUED)
                .values(status=status)
            )
            skipped = bool(getattr(result, "rowcount", 0))
            if skipped and note:
                s.add(OutboxMessage(chat_id=chat_id, text=note))
        return skipped

    async def tokens_since(self, job_id: int, since: datetime) -> int:
        """Tokens the job's runs used since `since` (its turns' model calls)."""
        async with self._db.session() as s:
            total = await s.scalar(
                select(func.coalesce(func.sum(ModelCall.total_tokens), 0))
                .join(JobRun, JobRun.turn_id == ModelCall.turn_id)
                .where(JobRun.job_id == job_id, ModelCall.created_at >= since)
            )
        return int(total or 0)

    async def first_cap_notice(self, job_id: int, day: str) -> bool:
        """True once per job per day: whoever flips the day tells the chat."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(JobRow)
                .where(
                    JobRow.id == job_id,
                    or_(JobRow.cap_notice_day.is_(None), JobRow.cap_notice_day != day),
                )
                .values(cap_notice_day=day)
            )
        return bool(getattr(result, "rowcount", 0))

    async def chat_known(self, chat_id: int) -> bool:
        """A chat an allowed user has talked in (strangers' chats are never stored)."""
        async with self._db.session() as s:
            return await s.get(Chat, chat_id) is not None
