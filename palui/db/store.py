"""Repositories: the only way the rest of Palui reads or writes rows.

Each method is one transaction. Rows leave this module as frozen dataclasses, never as ORM
objects, so nothing above the database layer can lazily load or accidentally write.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.approval_edits import ApprovalEditRepo
from palui.db.approvals import ApprovalRepo
from palui.db.calls import CallRecordRepo
from palui.db.delivery_leases import DeliveryLeaseRepo
from palui.db.engine import Database
from palui.db.jobs import JobRepo
from palui.db.leases import LeaseRepo
from palui.db.ledger import ActionLedger
from palui.db.memory import MemoryRepo
from palui.db.models import (
    Chat,
    ChatSession,
    InboxUpdate,
    MessageRow,
    ModelCall,
    OutboxMessage,
    PausedTurn,
    StrangerNotice,
    Turn,
    utcnow,
)
from palui.db.recovery import RecoveryRepo
from palui.db.repo import Repo
from palui.db.stop_requests import StopRequestRepo
from palui.db.tools import ToolSettingRepo
from palui.db.webhooks import WebhookRepo
from palui.domain import Completion, InboxStatus, Message, Role, Taint, TurnKind, TurnStatus

RECORD_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class InboxItem:
    update_id: int
    chat_id: int | None
    user_id: int | None
    payload: dict[str, Any]
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a history message came from (`palui.turns.taint` reads taint from it)."""

    turn_id: str | None
    tainted: bool  # the message came from a tainted turn
    taint: Taint | None = None  # that turn's recorded source, as it was in that turn


@dataclass(frozen=True, slots=True)
class History:
    session_id: int
    summary: str
    summary_tainted: bool
    messages: tuple[Message, ...]
    provenance: tuple[Provenance, ...] = ()  # one per message, in the same order


@dataclass(frozen=True, slots=True)
class OutboxItem:
    id: int
    chat_id: int
    text: str
    parts_sent: int


class InboxRepo(Repo):
    async def add(
        self, update_id: int, chat_id: int | None, user_id: int | None, payload: dict
    ) -> bool:
        """Store an update; False when it was already there (a redelivery)."""
        stmt = (
            self._insert(InboxUpdate)
            .values(
                update_id=update_id,
                chat_id=chat_id,
                user_id=user_id,
                payload=json.dumps(payload, separators=(",", ":")),
                status=InboxStatus.PENDING,
                received_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["update_id"])
        )
        async with self._db.session() as s, s.begin():
            result = await s.execute(stmt)
        return bool(getattr(result, "rowcount", 0))

    async def pending(self, chat_id: int | None = None) -> list[InboxItem]:
        query = select(InboxUpdate).where(InboxUpdate.status == InboxStatus.PENDING)
        if chat_id is not None:
            query = query.where(InboxUpdate.chat_id == chat_id)
        async with self._db.session() as s:
            rows = await s.scalars(query.order_by(InboxUpdate.update_id))
            return [_inbox_item(row) for row in rows]

    async def mark_done(self, update_ids: Sequence[int], turn_id: str | None = None) -> None:
        if not update_ids:
            return
        async with self._db.session() as s, s.begin():
            await _mark_inbox_done(s, update_ids, turn_id)


def _inbox_item(row: InboxUpdate) -> InboxItem:
    return InboxItem(row.update_id, row.chat_id, row.user_id, json.loads(row.payload), row.turn_id)


def _provenance(row: MessageRow, labels: dict[str, str | None]) -> Provenance:
    label = labels.get(row.turn_id) if row.tainted and row.turn_id else None
    return Provenance(row.turn_id, bool(row.tainted), Taint.from_label(label) if label else None)


async def _mark_inbox_done(s: AsyncSession, update_ids: Sequence[int], turn_id: str | None) -> None:
    await s.execute(
        update(InboxUpdate)
        .where(InboxUpdate.update_id.in_(list(update_ids)))
        .values(status=InboxStatus.DONE, handled_at=utcnow(), turn_id=turn_id)
    )


class ChatRepo(Repo):
    async def current_session(self, chat_id: int, kind: str = "private") -> int:
        """The chat's open session, created (with the chat) on first contact."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(Chat)
                .values(id=chat_id, kind=kind, created_at=utcnow())
                .on_conflict_do_nothing(index_elements=["id"])
            )
            chat = await s.get_one(Chat, chat_id, with_for_update=not self._db.is_sqlite)
            if chat.current_session_id is None:
                session = ChatSession(chat_id=chat_id)
                s.add(session)
                await s.flush()
                chat.current_session_id = session.id
            return chat.current_session_id

    async def new_session(self, chat_id: int) -> int:
        async with self._db.session() as s, s.begin():
            chat = await s.get(Chat, chat_id, with_for_update=not self._db.is_sqlite)
            if chat is None:
                chat = Chat(id=chat_id)
                s.add(chat)
            elif chat.current_session_id is not None:
                await s.execute(
                    update(ChatSession)
                    .where(ChatSession.id == chat.current_session_id)
                    .values(closed_at=utcnow())
                )
            session = ChatSession(chat_id=chat_id)
            s.add(session)
            await s.flush()
            chat.current_session_id = session.id
            return session.id

    async def history(self, session_id: int, limit: int, after: int = 0) -> History:
        """The session's summary and its last `limit` messages after message id `after` (what
        the summary covers), oldest first."""
        async with self._db.session() as s:
            session = await s.get_one(ChatSession, session_id)
            rows = list(
                await s.scalars(
                    select(MessageRow)
                    .where(MessageRow.session_id == session_id, MessageRow.id > after)
                    .order_by(MessageRow.id.desc())
                    .limit(limit)
                )
            )
            rows.reverse()
            tainted_turns = {row.turn_id for row in rows if row.tainted and row.turn_id}
            labels: dict[str, str | None] = {}
            if tainted_turns:
                found = await s.execute(
                    select(Turn.id, Turn.taint_source).where(Turn.id.in_(tainted_turns))
                )
                labels = {turn_id: label for turn_id, label in found.all()}
        return History(
            session_id=session_id,
            summary=session.summary,
            summary_tainted=session.summary_tainted,
            messages=tuple(Message(Role(r.role), r.content) for r in rows),
            provenance=tuple(_provenance(r, labels) for r in rows),
        )

    async def count_sessions(self, chat_id: int) -> int:
        async with self._db.session() as s:
            return await s.scalar(select(func.count()).where(ChatSession.chat_id == chat_id)) or 0


class TurnRepo(Repo):
    async def start(
        self,
        turn_id: str,
        chat_id: int,
        session_id: int,
        kind: TurnKind,
        inputs: Sequence[tuple[int, str]],
    ) -> None:
        """Record a running turn and add the person's messages (once per update) to history."""
        async with self._db.session() as s, s.begin():
            s.add(
                Turn(
                    id=turn_id,
                    chat_id=chat_id,
                    session_id=session_id,
                    kind=kind,
                    status=TurnStatus.RUNNING,
                    started_at=utcnow(),
                )
            )
            for update_id, text in inputs:
                await s.execute(
                    self._insert(MessageRow)
                    .values(
                        session_id=session_id,
                        chat_id=chat_id,
                        role=Role.USER,
                        content=text,
                        turn_id=turn_id,
                        update_id=update_id,
                        created_at=utcnow(),
                    )
                    .on_conflict_do_nothing(index_elements=["update_id"])
                )
            await s.execute(
                update(InboxUpdate)
                .where(InboxUpdate.update_id.in_([u for u, _ in inputs]))
                .values(turn_id=turn_id)
            )

    async def finish(
        self,
        turn_id: str,
        status: TurnStatus,
        *,
        update_ids: Sequence[int],
        reply: str | None = None,
        remember: bool = True,
        steps: int = 0,
        budget_hit: str | None = None,
        error: str | None = None,
        taint: Taint | None = None,
    ) -> int | None:
        """End a turn in one transaction: its reply into history and the outbox, inbox done.

        Returns the reply's outbox id."""
        outbox_id: int | None = None
        async with self._db.session() as s, s.begin():
            turn = await s.get_one(Turn, turn_id)
            turn.status = status
            turn.ended_at = utcnow()
            turn.steps = steps
            turn.budget_hit = budget_hit
            turn.error = error
            turn.tainted = turn.tainted or taint is not None
            turn.taint_source = turn.taint_source or (taint.label if taint else None)
            if reply is not None:
                if remember:
                    s.add(
                        MessageRow(
                            session_id=turn.session_id,
                            chat_id=turn.chat_id,
                            role=Role.ASSISTANT,
                            content=reply,
                            turn_id=turn_id,
                            tainted=turn.tainted,
                        )
                    )
                outbox = OutboxMessage(chat_id=turn.chat_id, text=reply, turn_id=turn_id)
                s.add(outbox)
                await s.flush()
                outbox_id = outbox.id
            await _mark_inbox_done(s, update_ids, turn_id)
            # A resumed turn that ends is no longer paused.
            await s.execute(delete(PausedTurn).where(PausedTurn.turn_id == turn_id))
        return outbox_id

    async def record_model_call(
        self, turn_id: str | None, chat_id: int | None, completion: Completion, latency_s: float
    ) -> None:
        async with self._db.session() as s, s.begin():
            s.add(
                ModelCall(
                    turn_id=turn_id,
                    chat_id=chat_id,
                    model=completion.model,
                    prompt_tokens=completion.usage.prompt_tokens,
                    completion_tokens=completion.usage.completion_tokens,
                    total_tokens=completion.usage.total_tokens,
                    latency_ms=round(latency_s * 1000),
                    created_at=utcnow(),
                )
            )

    async def tokens_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            total = await s.scalar(
                select(func.coalesce(func.sum(ModelCall.total_tokens), 0)).where(
                    ModelCall.created_at >= since
                )
            )
        return int(total or 0)

    async def oldest_run_since(self, since: datetime) -> datetime | None:
        async with self._db.session() as s:
            return await s.scalar(select(func.min(Turn.started_at)).where(Turn.started_at >= since))

    async def runs_since(self, since: datetime) -> int:
        async with self._db.session() as s:
            count = await s.scalar(select(func.count()).where(Turn.started_at >= since))
        return int(count or 0)


class OutboxRepo(Repo):
    async def add(self, chat_id: int, text: str) -> int:
        async with self._db.session() as s, s.begin():
            row = OutboxMessage(chat_id=chat_id, text=text)
            s.add(row)
            await s.flush()
            return row.id

    async def pending(self, chat_id: int | None = None) -> list[OutboxItem]:
        query = select(OutboxMessage).where(OutboxMessage.sent_at.is_(None))
        if chat_id is not None:
            query = query.where(OutboxMessage.chat_id == chat_id)
        async with self._db.session() as s:
            rows = await s.scalars(query.order_by(OutboxMessage.id))
            return [OutboxItem(r.id, r.chat_id, r.text, r.parts_sent) for r in rows]

    async def part_sent(self, outbox_id: int, parts_sent: int, *, done: bool) -> None:
        """Record delivered parts. The part is already in the chat, so a failure here would make
        the sweeper send it again: a busy database gets a few more tries first."""
        for attempt in range(RECORD_ATTEMPTS):
            try:
                async with self._db.session() as s, s.begin():
                    await s.execute(
                        update(OutboxMessage)
                        .where(OutboxMessage.id == outbox_id)
                        .values(parts_sent=parts_sent, sent_at=utcnow() if done else None)
                    )
                return
            except OperationalError:
                if attempt + 1 == RECORD_ATTEMPTS:
                    raise
                await asyncio.sleep(0.2 * 2**attempt)


class StrangerRepo(Repo):
    async def first_today(self, user_id: int, now: datetime) -> bool:
        """Count a stranger's attempt; True only for their first one of the (UTC) day."""
        day = now.date().isoformat()
        async with self._db.session() as s, s.begin():
            inserted = await s.execute(
                self._insert(StrangerNotice)
                .values(user_id=user_id, day=day, attempts=1)
                .on_conflict_do_nothing(index_elements=["user_id", "day"])
            )
            if getattr(inserted, "rowcount", 0):
                return True
            await s.execute(
                update(StrangerNotice)
                .where(StrangerNotice.user_id == user_id, StrangerNotice.day == day)
                .values(attempts=StrangerNotice.attempts + 1)
            )
            return False


class Store:
    """All repositories over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.inbox = InboxRepo(db)
        self.chats = ChatRepo(db)
        self.turns = TurnRepo(db)
        self.outbox = OutboxRepo(db)
        self.strangers = StrangerRepo(db)
        self.tool_calls = CallRecordRepo(db)  # each call's record
        self.approvals = ApprovalRepo(db)
        self.tool_settings = ToolSettingRepo(db)
        self.actions = ActionLedger(db)
        self.approval_edits = ApprovalEditRepo(db)
        self.memory = MemoryRepo(db)
        self.webhooks = WebhookRepo(db)
        self.leases = LeaseRepo(db)
        self.recovery = RecoveryRepo(db)
        self.delivery_leases = DeliveryLeaseRepo(db)
        self.jobs = JobRepo(db)
        self.stop_requests = StopRequestRepo(db)


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def hour_ago(now: datetime) -> datetime:
    return now - timedelta(hours=1)
