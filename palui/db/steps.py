"""The tool pipeline's record: every step of every call, the daily send count, and the runs
view behind `palui runs` (implements `palui.tools.rules.StepRecorder`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from palui.db.models import SendCapNotice, ToolCallRow, ToolStep, Turn, utcnow
from palui.db.repo import Repo

EXECUTE = "execute"
RUNNING = "running"


@dataclass(frozen=True, slots=True)
class StepRecord:
    id: int
    turn_id: str
    step: int
    call_id: str
    tool: str
    stage: str
    outcome: str
    reason: str
    detail: dict[str, Any]
    duration_ms: int | None
    at: datetime


@dataclass(frozen=True, slots=True)
class RunSummary:
    turn_id: str
    chat_id: int
    kind: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    calls: int
    error: str | None


class AmbiguousRun(LookupError):
    """A turn id prefix that fits more than one turn."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        super().__init__(prefix)
        self.prefix = prefix
        self.matches = matches


class ToolStepRepo(Repo):
    async def step_recorded(
        self,
        turn_id: str,
        step: int,
        call_id: str,
        tool: str,
        stage: str,
        outcome: str,
        reason: str = "",
        detail: dict[str, Any] | None = None,
        *,
        sends_out: bool = False,
        duration_s: float | None = None,
    ) -> int:
        async with self._db.session() as s, s.begin():
            row = ToolStep(
                turn_id=turn_id, step=step, call_id=call_id[:128], tool=tool[:128],
                stage=stage, outcome=outcome[:24], reason=reason,
                detail=json.dumps(detail, ensure_ascii=False, default=str) if detail else None,
                sends_out=sends_out, created_at=utcnow(),
                duration_ms=None if duration_s is None else round(duration_s * 1000),
            )  # fmt: skip
            s.add(row)
            await s.flush()
            return row.id

    async def step_ended(self, step_id: int, outcome: str, reason: str, duration_s: float) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(ToolStep)
                .where(ToolStep.id == step_id)
                .values(outcome=outcome[:24], reason=reason, duration_ms=round(duration_s * 1000))
            )

    async def sends_since(self, since: datetime) -> int:
        """Calls of tools that send out which went out (or started to) since `since`."""
        async with self._db.session() as s:
            count = await s.scalar(
                select(func.count()).where(
                    ToolStep.stage == EXECUTE,
                    ToolStep.sends_out.is_(True),
                    ToolStep.created_at >= since,
                )
            )
        return int(count or 0)

    async def first_cap_notice(self, chat_id: int, day: str) -> bool:
        """True only the first time this chat is told about the send cap on this (UTC) day."""
        async with self._db.session() as s, s.begin():
            inserted = await s.execute(
                self._insert(SendCapNotice)
                .values(chat_id=chat_id, day=day)
                .on_conflict_do_nothing(index_elements=["chat_id", "day"])
            )
        return bool(getattr(inserted, "rowcount", 0))

    # -- palui runs ------------------------------------------------------------------------------

    async def recent_runs(self, limit: int = 20) -> list[RunSummary]:
        calls = (
            select(ToolCallRow.turn_id, func.count().label("n"))
            .group_by(ToolCallRow.turn_id)
            .subquery()
        )
        async with self._db.session() as s:
            rows = await s.execute(
                select(Turn, calls.c.n)
                .outerjoin(calls, calls.c.turn_id == Turn.id)
                .order_by(Turn.started_at.desc(), Turn.id)
                .limit(limit)
            )
            return [_summary(turn, n or 0) for turn, n in rows]

    async def find_run(self, prefix: str) -> RunSummary | None:
        """The turn whose id is or starts with `prefix`; AmbiguousRun if several fit."""
        async with self._db.session() as s:
            turns = list(
                await s.scalars(
                    select(Turn).where(Turn.id.startswith(prefix, autoescape=True)).limit(6)
                )
            )
            if not turns:
                return None
            exact = [t for t in turns if t.id == prefix]
            if len(turns) > 1 and not exact:
                raise AmbiguousRun(prefix, [t.id for t in turns])
            turn = exact[0] if exact else turns[0]
            count = await s.scalar(
                select(func.count()).select_from(ToolCallRow).where(ToolCallRow.turn_id == turn.id)
            )
            return _summary(turn, int(count or 0))

    async def steps(self, turn_id: str) -> list[StepRecord]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ToolStep).where(ToolStep.turn_id == turn_id).order_by(ToolStep.id)
            )
            return [
                StepRecord(
                    r.id,
                    r.turn_id,
                    r.step,
                    r.call_id,
                    r.tool,
                    r.stage,
                    r.outcome,
                    r.reason,
                    json.loads(r.detail) if r.detail else {},
                    r.duration_ms,
                    r.created_at,
                )
                for r in rows
            ]


def _summary(turn: Turn, calls: int) -> RunSummary:
    return RunSummary(
        turn.id, turn.chat_id, turn.kind, turn.status, turn.started_at, turn.ended_at, calls,
        turn.error,
    )  # fmt: skip
