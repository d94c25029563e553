"""The runs view behind `palui runs`: recent turns and the stage-by-stage story of a turn's
tool calls, read from their records (`CallRecordRow`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from palui.db.models import CallRecordRow, Topic, Turn
from palui.db.repo import Repo
from palui.db.topics import TOPIC_KEYS, is_topic_key
from palui.domain import CallStage, CallStatus
from palui.errors import AmbiguousRun

# A held or unapproved call is only a card: `palui runs` counts the calls that reached the end.
NOT_RAN = [str(status) for status in CallStatus if not status.ran]


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One stage of one call."""

    record_id: int
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
    topic_id: int = 0  # the chat's topic the turn ran in (palui.db.topics); 0: the chat itself
    trace_id: str | None = None  # its span's trace id, as its log lines carry it (tracing on)


class RunRepo(Repo):
    async def recent_runs(self, limit: int = 20) -> list[RunSummary]:
        calls = (
            select(CallRecordRow.turn_id, func.count().label("n"))
            .where(CallRecordRow.status.not_in(NOT_RAN))
            .group_by(CallRecordRow.turn_id)
            .subquery()
        )
        async with self._db.session() as s:
            rows = await s.execute(
                select(Turn, calls.c.n, Topic.chat_id, Topic.topic_id)
                .outerjoin(calls, calls.c.turn_id == Turn.id)
                .outerjoin(Topic, Topic.id == TOPIC_KEYS - Turn.chat_id)
                .order_by(Turn.started_at.desc(), Turn.id)
                .limit(limit)
            )
            return [_summary(turn, n or 0, (chat, topic)) for turn, n, chat, topic in rows]

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
                select(func.count())
                .select_from(CallRecordRow)
                .where(CallRecordRow.turn_id == turn.id, CallRecordRow.status.not_in(NOT_RAN))
            )
            topic = None
            if is_topic_key(turn.chat_id):  # else a chat's own id: no topic row to read
                where = Topic.id == TOPIC_KEYS - turn.chat_id
                topic = (
                    await s.execute(select(Topic.chat_id, Topic.topic_id).where(where))
                ).first()
            return _summary(turn, int(count or 0), (topic[0], topic[1]) if topic else (None, None))

    async def decisions(self, decision_id: str, limit: int = 20) -> list[StepRecord]:
        """The policy stages recorded under a decision id, newest first (the id covers the tool,
        its class, the decision and what they rested on, so several calls may share one)."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(CallRecordRow)
                .where(CallRecordRow.decision_id == decision_id)
                .order_by(CallRecordRow.id.desc())
                .limit(limit)
            )
            return [
                step
                for row in rows
                for step in _stages(row)
                if step.stage == CallStage.POLICY and step.detail.get("decision_id") == decision_id
            ]

    async def steps(self, turn_id: str) -> list[StepRecord]:
        """Every stage of the turn's calls in the order they happened (calls running side by
        side interleave, and a held call's approval comes after the rest of its step)."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(CallRecordRow)
                .where(CallRecordRow.turn_id == turn_id)
                .order_by(CallRecordRow.id)
            )
            steps = [step for row in rows for step in _stages(row)]
        return sorted(steps, key=lambda step: step.at)  # stable: ties keep the record order


def _stages(row: CallRecordRow) -> list[StepRecord]:
    return [_step(row, entry) for entry in json.loads(row.stages or "[]")]


def _step(row: CallRecordRow, e: dict[str, Any]) -> StepRecord:
    return StepRecord(
        row.id,
        row.turn_id,
        row.step,
        row.call_id,
        row.tool,
        e["stage"],
        e["outcome"],
        e["reason"],
        e["detail"] or {},
        e["duration_ms"],
        _utc(e["at"]),
    )


def _utc(at: str) -> datetime:
    moment = datetime.fromisoformat(at)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _summary(turn: Turn, calls: int, topic: tuple[Any, Any]) -> RunSummary:
    """`topic`: the chat and topic behind a topic's key (None, None for a chat's own turn)."""
    chat_id, topic_id = topic if topic[0] is not None else (turn.chat_id, 0)
    return RunSummary(
        turn.id,
        chat_id,
        turn.kind,
        turn.status,
        turn.started_at,
        turn.ended_at,
        calls,
        turn.error,
        topic_id,
        turn.trace_id,
    )
