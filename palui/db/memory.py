"""Memory's rows: the recall card's switches, auto-recall checks, and the slices of a session
that compaction summarises and auto-save stores in recall (DESIGN §1.7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, bindparam, exists, func, select, update

from palui.db import settings_version
from palui.db.models import (
    Chat,
    ChatSession,
    MemorySlice,
    MemorySwitches,
    MessageRow,
    RecallCheck,
    Turn,
    utcnow,
)
from palui.db.repo import Repo
from palui.db.riders import check_row, write_check
from palui.domain import (
    CheckOutcome,
    SaveState,
    SliceMessage,
    SliceReason,
    SliceRecord,
    StoredSwitches,
    TurnStatus,
)

SWITCH_NAMES = ("auto_recall", "auto_save", "memory_tools")
UNFINISHED = (TurnStatus.RUNNING, TurnStatus.AWAITING_APPROVAL)
UNSAVED = (SaveState.PENDING, SaveState.FAILED)  # a save still to do (again)


def outlook_columns(chat_id: Any) -> tuple[Any, Any, Any]:
    """The chat's open session, its messages no slice holds yet, whether a slice has work left:
    three scalar subqueries, for one SELECT of whoever asks (`chat_id`: a value or a bind
    parameter, for a statement built once)."""
    chat, slices, messages = Chat.__table__.c, MemorySlice.__table__.c, MessageRow.__table__.c
    session = select(chat.current_session_id).where(chat.id == chat_id).scalar_subquery()
    after = select(func.coalesce(func.max(slices.last_message_id), 0)).where(
        slices.session_id == session
    )
    unsliced = (
        select(func.count())
        .where(messages.session_id == session, messages.id > after.scalar_subquery())
        .scalar_subquery()
    )
    open_work = exists().where(slices.chat_id == chat_id, _open_work())
    return session, unsliced, open_work


def _open_work() -> ColumnElement[bool]:
    """A slice with work left: a save still to do (again), or a summary not yet written."""
    slices = MemorySlice.__table__.c
    return slices.save_state.in_(UNSAVED) | (
        (slices.reason == SliceReason.COMPACTION) & slices.summarised.is_(False)
    )


# Maintenance's look, built once (as the chat worker's, `palui.db.queues`).
_OUTLOOK = select(*outlook_columns(bindparam("chat_id", type_=Chat.__table__.c.id.type)))


def _slice(row: MemorySlice) -> SliceRecord:
    return SliceRecord(
        row.id,
        row.chat_id,
        row.session_id,
        row.first_message_id,
        row.last_message_id,
        SliceReason(row.reason),
        row.summarised,
        SaveState(row.save_state),
        row.updated_at,
    )


class MemoryRepo(Repo):
    # -- switches -------------------------------------------------------------------------------

    async def switches(self, connector_id: str) -> StoredSwitches:
        async with self._db.session() as s:
            row = await s.get(MemorySwitches, connector_id)
            if row is None:
                return StoredSwitches()
            return StoredSwitches(row.auto_recall, row.auto_save, row.memory_tools)

    async def set_switch(self, connector_id: str, name: str, value: bool) -> None:
        if name not in SWITCH_NAMES:
            raise ValueError(f"unknown memory switch {name!r}")
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(MemorySwitches)
                .values(connector_id=connector_id, updated_at=utcnow(), **{name: value})
                .on_conflict_do_update(
                    index_elements=["connector_id"], set_={name: value, "updated_at": utcnow()}
                )
            )
            await settings_version.bump(s, self._insert)  # other processes reload it

    # -- auto-recall checks -----------------------------------------------------------------------

    async def record_check(
        self,
        chat_id: int,
        outcome: CheckOutcome,
        *,
        turn_id: str | None = None,
        detail: str | None = None,
        latency_ms: int | None = None,
    ) -> None:
        async with self._db.session() as s, s.begin():
            await write_check(s, check_row(chat_id, outcome, turn_id, detail, latency_ms))

    async def recent_checks(self, limit: int) -> list[CheckOutcome]:
        """The outcomes of the last `limit` checks, newest first."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(RecallCheck.outcome).order_by(RecallCheck.id.desc()).limit(limit)
            )
            return [CheckOutcome(outcome) for outcome in rows]

    # -- slices -----------------------------------------------------------------------------------

    async def outlook(self, chat_id: int) -> tuple[int | None, int, bool]:
        """In one query, what maintenance needs to know before it does anything: the chat's
        open session (None: no chat yet), how many of its messages no slice holds yet, and
        whether any slice of the chat has work left. (The chat worker reads it along with its
        queues instead, `palui.db.queues`.)"""
        async with self._db.session() as s:
            row = (await s.execute(_OUTLOOK, {"chat_id": chat_id})).one()
        return row[0], int(row[1] or 0), bool(row[2])

    async def unsliced_ids(self, session_id: int) -> list[int]:
        """Ids of the session's messages after its last slice, oldest first."""
        async with self._db.session() as s:
            after = await s.scalar(
                select(func.max(MemorySlice.last_message_id)).where(
                    MemorySlice.session_id == session_id
                )
            )
            rows = await s.scalars(
                select(MessageRow.id)
                .where(MessageRow.session_id == session_id, MessageRow.id > (after or 0))
                .order_by(MessageRow.id)
            )
            return list(rows)

    async def plan_slice(
        self,
        chat_id: int,
        session_id: int,
        first: int,
        last: int,
        reason: SliceReason,
        save_state: SaveState,
    ) -> None:
        """Fix a slice (a second plan of the same one, e.g. by another process, is a no-op)."""
        now = utcnow()
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(MemorySlice)
                .values(
                    chat_id=chat_id,
                    session_id=session_id,
                    first_message_id=first,
                    last_message_id=last,
                    reason=reason,
                    summarised=False,
                    save_state=save_state,
                    saved_count=0,
                    created_at=now,
                    updated_at=now,
                )
                .on_conflict_do_nothing(index_elements=["session_id", "first_message_id"])
            )

    async def open_slices(self, chat_id: int) -> list[SliceRecord]:
        """The chat's slices with work left: a summary not yet written, or a save not done."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(MemorySlice)
                .where(MemorySlice.chat_id == chat_id, _open_work())
                .order_by(MemorySlice.id)
            )
            return [_slice(row) for row in rows]

    async def chats_with_open_slices(self) -> list[int]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(MemorySlice.chat_id)
                .where(
                    MemorySlice.save_state.in_(UNSAVED)
                    | (
                        (MemorySlice.reason == SliceReason.COMPACTION)
                        & MemorySlice.summarised.is_(False)
                    )
                )
                .distinct()
            )
            return list(rows)

    async def slice_messages(self, record: SliceRecord) -> list[SliceMessage]:
        async with self._db.session() as s:
            rows = await s.execute(
                select(MessageRow, Turn.tainted, Turn.status)
                .outerjoin(Turn, Turn.id == MessageRow.turn_id)
                .where(
                    MessageRow.session_id == record.session_id,
                    MessageRow.id >= record.first_message_id,
                    MessageRow.id <= record.last_message_id,
                )
                .order_by(MessageRow.id)
            )
            found = []
            for m, turn_tainted, status in rows:
                finished = status is None or status not in UNFINISHED
                tainted = bool(m.tainted or turn_tainted)
                found.append(SliceMessage(m.id, m.role, m.content, m.turn_id, tainted, finished))
            return found

    async def commit_summary(self, slice_id: int, summary: str, tainted: bool) -> bool:
        """Write the session's new summary and mark the slice summarised, in one transaction.
        False when the slice was already summarised (a retry that lost the race)."""
        async with self._db.session() as s, s.begin():
            row = await s.get(MemorySlice, slice_id, with_for_update=not self._db.is_sqlite)
            if row is None or row.summarised:
                return False
            session = await s.get_one(ChatSession, row.session_id)
            session.summary = summary
            # Taint is never laundered: once the summary held untrusted content it stays marked.
            session.summary_tainted = session.summary_tainted or tainted
            row.summarised = True
            row.updated_at = utcnow()
            return True

    async def set_save_state(
        self,
        slice_ids: Sequence[int],
        state: SaveState,
        *,
        saved: int = 0,
        error: str | None = None,
    ) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(MemorySlice)
                .where(MemorySlice.id.in_(list(slice_ids)))
                .values(save_state=state, saved_count=saved, error=error, updated_at=utcnow())
            )
