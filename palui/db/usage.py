"""Usage over time for the web console's charts: tokens and runs in consecutive windows, per
chat and per job.

Counted exactly as the caps count (`TurnRepo.tokens_since` / `runs_since`, `JobRepo.tokens_since`):
model calls by `created_at`, runs by the turn's `started_at`. The windows are given as their
starts; each runs to the next start and the last one is open-ended, as the caps' windows are, so
the last bar of a chart is the number the cap checks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, literal, select

from palui.db.models import JobRun, ModelCall, Turn
from palui.db.repo import Repo


def _bucket(column: Any, starts: Sequence[datetime]) -> Any:
    """Which window a time falls in: 0 for the first, len(starts)-1 for the open last one."""
    if len(starts) == 1:
        return literal(0)
    whens = [(column < start, index) for index, start in enumerate(starts[1:])]
    return case(*whens, else_=len(starts) - 1)


def _per_window(inner: Any) -> Any:
    """Sum the inner rows' `n` per window `w` (grouped outside: PostgreSQL can't match a
    bound CASE in the select list to the same one in GROUP BY)."""
    rows = inner.subquery()
    return select(rows.c.w, func.sum(rows.c.n)).group_by(rows.c.w)


class UsageRepo(Repo):
    async def tokens_in(
        self, starts: Sequence[datetime], chat_ids: Collection[int] | None = None
    ) -> list[int]:
        """Tokens of all model calls in each window (only those chats' when given)."""
        inner = select(
            _bucket(ModelCall.created_at, starts).label("w"), ModelCall.total_tokens.label("n")
        ).where(ModelCall.created_at >= starts[0])
        if chat_ids is not None:
            inner = inner.where(ModelCall.chat_id.in_(list(chat_ids)))
        return await self._spread(_per_window(inner), len(starts))

    async def runs_in(
        self, starts: Sequence[datetime], chat_ids: Collection[int] | None = None
    ) -> list[int]:
        """Turns started in each window (only those chats' when given)."""
        inner = select(_bucket(Turn.started_at, starts).label("w"), literal(1).label("n")).where(
            Turn.started_at >= starts[0]
        )
        if chat_ids is not None:
            inner = inner.where(Turn.chat_id.in_(list(chat_ids)))
        return await self._spread(_per_window(inner), len(starts))

    async def tokens_by_chat(self, since: datetime) -> dict[int | None, int]:
        """Tokens since `since` per chat (None: model calls of no chat, e.g. compaction)."""
        query = (
            select(ModelCall.chat_id, func.coalesce(func.sum(ModelCall.total_tokens), 0))
            .where(ModelCall.created_at >= since)
            .group_by(ModelCall.chat_id)
        )
        async with self._db.session() as s:
            return {chat: int(total) for chat, total in (await s.execute(query)).all()}

    async def runs_by_chat(self, since: datetime) -> dict[int, int]:
        query = (
            select(Turn.chat_id, func.count())
            .where(Turn.started_at >= since)
            .group_by(Turn.chat_id)
        )
        async with self._db.session() as s:
            return {chat: int(count) for chat, count in (await s.execute(query)).all()}

    async def tokens_by_job(self, since: datetime, job_ids: Collection[int]) -> dict[int, int]:
        """Tokens each job's runs used since `since` (as `JobRepo.tokens_since`, its cap)."""
        if not job_ids:
            return {}
        query = (
            select(JobRun.job_id, func.coalesce(func.sum(ModelCall.total_tokens), 0))
            .join(JobRun, JobRun.turn_id == ModelCall.turn_id)
            .where(JobRun.job_id.in_(list(job_ids)), ModelCall.created_at >= since)
            .group_by(JobRun.job_id)
        )
        async with self._db.session() as s:
            return {job: int(total) for job, total in (await s.execute(query)).all()}

    async def runs_by_job(self, since: datetime, job_ids: Collection[int]) -> dict[int, int]:
        """Runs of each job whose turn started since `since`."""
        if not job_ids:
            return {}
        query = (
            select(JobRun.job_id, func.count())
            .where(
                JobRun.job_id.in_(list(job_ids)),
                JobRun.started_at.is_not(None),
                JobRun.started_at >= since,
            )
            .group_by(JobRun.job_id)
        )
        async with self._db.session() as s:
            return {job: int(count) for job, count in (await s.execute(query)).all()}

    async def tokens_by_turn(self, turn_ids: Collection[str]) -> dict[str, int]:
        """Tokens each turn's model calls used (a job run's token use)."""
        if not turn_ids:
            return {}
        query = (
            select(ModelCall.turn_id, func.coalesce(func.sum(ModelCall.total_tokens), 0))
            .where(ModelCall.turn_id.in_(list(turn_ids)))
            .group_by(ModelCall.turn_id)
        )
        async with self._db.session() as s:
            return {str(turn): int(total) for turn, total in (await s.execute(query)).all()}

    async def _spread(self, query: Any, windows: int) -> list[int]:
        counts = [0] * windows
        async with self._db.session() as s:
            for index, total in (await s.execute(query)).all():
                counts[int(index)] += int(total or 0)
        return counts
