"""Turns as the web console lists them: what started each, its steps, tokens, time, taint and
outcome, for the chats a person may see; and each tool call of a turn with its arguments and
result (the stages themselves are `palui.db.runs.RunRepo.steps`)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.inbox import claimed_by
from palui.db.models import (
    CallRecordRow,
    InboxUpdate,
    JobRow,
    JobRun,
    ModelCall,
    Turn,
    TurnOfferRow,
    WebhookDelivery,
)
from palui.db.repo import Repo
from palui.domain import InboxStatus

TRIGGER_CHARS = 140


@dataclass(frozen=True, slots=True)
class TurnOverview:
    turn_id: str
    chat_id: int
    kind: str
    status: str
    trigger: str  # the person's message, the job's prompt, or the webhook's name
    started_at: datetime
    ended_at: datetime | None
    steps: int  # model steps
    calls: int  # tool calls, held ones included
    tokens: int
    tainted: bool
    taint_source: str | None
    budget_hit: str | None
    error: str | None
    model: str | None = None  # the model its chat had chosen (/model); None: the default
    trace_id: str | None = None  # its span's trace id, as its log lines carry it (tracing on)

    @property
    def duration_s(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass(frozen=True, slots=True)
class CallOverview:
    call_id: str
    step: int
    tool: str
    tool_class: str | None
    sends_out: bool
    arguments: str
    model_arguments: str | None  # what the model asked, when a person edited the call
    decision: str | None
    decision_id: str | None
    reason: str | None
    status: str
    result: str | None
    duration_ms: int | None


@dataclass(frozen=True, slots=True)
class OfferedOverview:
    """A tool the turn was offered, and why."""

    tool: str
    why: str
    detail: str
    enabled: int  # how many tools the turn could have been offered then


def _cut(text: str, limit: int = TRIGGER_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class TurnListingRepo(Repo):
    async def listing(
        self,
        chat_ids: Collection[int],
        *,
        chat_id: int | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int = 50,
    ) -> list[TurnOverview]:
        """Newest first, only of `chat_ids` (and of `chat_id`, `kind`, `status` when given)."""
        chats = [c for c in chat_ids if chat_id is None or c == chat_id]
        query = select(Turn).where(Turn.chat_id.in_(chats))
        if kind:
            query = query.where(Turn.kind == kind)
        if status:
            query = query.where(Turn.status == status)
        query = query.order_by(Turn.started_at.desc(), Turn.id).limit(limit)
        async with self._db.session() as s:
            turns = list(await s.scalars(query))
        return await self._overviews(turns)

    async def one(self, turn_id: str, chat_ids: Collection[int]) -> TurnOverview | None:
        async with self._db.session() as s:
            turn = await s.get(Turn, turn_id)
        if turn is None or turn.chat_id not in chat_ids:
            return None
        (overview,) = await self._overviews([turn])
        return overview

    async def offered(self, turn_id: str) -> list[OfferedOverview]:
        """The tools the turn was offered, in the order they were (a search's last)."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(TurnOfferRow)
                .where(TurnOfferRow.turn_id == turn_id)
                .order_by(TurnOfferRow.id)
            )
            return [OfferedOverview(r.tool, r.why, r.detail, r.enabled) for r in rows]

    async def calls(self, turn_id: str) -> list[CallOverview]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(CallRecordRow)
                .where(CallRecordRow.turn_id == turn_id)
                .order_by(CallRecordRow.id)
            )
            return [
                CallOverview(
                    r.call_id,
                    r.step,
                    r.tool,
                    r.tool_class,
                    r.sends_out,
                    r.arguments,
                    r.model_arguments,
                    r.decision,
                    r.decision_id,
                    r.reason,
                    r.status,
                    r.result,
                    r.duration_ms,
                )
                for r in rows
            ]

    async def _overviews(self, turns: Sequence[Turn]) -> list[TurnOverview]:
        ids = [t.id for t in turns]
        if not ids:
            return []
        async with self._db.session() as s:
            token_rows = await s.execute(
                select(ModelCall.turn_id, func.sum(ModelCall.total_tokens))
                .where(ModelCall.turn_id.in_(ids))
                .group_by(ModelCall.turn_id)
            )
            tokens = {turn_id: int(n or 0) for turn_id, n in token_rows}
            call_rows = await s.execute(
                select(CallRecordRow.turn_id, func.count())
                .where(CallRecordRow.turn_id.in_(ids))
                .group_by(CallRecordRow.turn_id)
            )
            calls = {turn_id: int(n) for turn_id, n in call_rows}
            triggers = await _triggers(s, ids)
        return [
            TurnOverview(
                t.id,
                t.chat_id,
                t.kind,
                t.status,
                triggers.get(t.id, ""),
                t.started_at,
                t.ended_at,
                t.steps or 0,
                int(calls.get(t.id, 0)),
                int(tokens.get(t.id) or 0),
                bool(t.tainted),
                t.taint_source,
                t.budget_hit,
                t.error,
                t.model,
                t.trace_id,
            )
            for t in turns
        ]


async def _triggers(s: AsyncSession, ids: list[str]) -> dict[str, str]:
    """What started each turn: the first message it answered, the job, or the webhook."""
    found: dict[str | None, str] = {}
    # A done update names its turn; a pending one its claim (a running turn's, `claimed_by`).
    claimed = claimed_by(InboxUpdate.update_id)
    messages = await s.execute(
        select(func.coalesce(InboxUpdate.turn_id, claimed), InboxUpdate.payload)
        .where(
            InboxUpdate.turn_id.in_(ids)
            | ((InboxUpdate.status == InboxStatus.PENDING) & claimed.in_(ids))
        )
        .order_by(InboxUpdate.update_id)
    )
    for answered_by, payload in messages:
        if answered_by not in found:
            try:
                text = json.loads(payload).get("text") or ""
            except (ValueError, AttributeError):
                text = ""
            found[answered_by] = _cut(text) or "(a message without text)"
    jobs = await s.execute(
        select(JobRun.turn_id, JobRow.id, JobRow.prompt)
        .join(JobRow, JobRow.id == JobRun.job_id)
        .where(JobRun.turn_id.in_(ids))
    )
    for turn_id, job_id, prompt in jobs:
        found[turn_id] = _cut(f"job #{job_id}: {prompt}")
    hooks = await s.execute(
        select(WebhookDelivery.turn_id, WebhookDelivery.webhook).where(
            WebhookDelivery.turn_id.in_(ids)
        )
    )
    for turn_id, name in hooks:
        found[turn_id] = f"webhook {name}"
    return {turn_id: text for turn_id, text in found.items() if turn_id}
