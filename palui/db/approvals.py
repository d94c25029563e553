"""Approval records and paused turns: the lifecycle of a card (`palui.domain.ApprovalStatus`),
every step one transaction.

A claim is a conditional UPDATE, so a second tap, a replay, or a second process changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import select, update

from palui.db.engine import Database
from palui.db.leases import check, held_by
from palui.db.models import ApprovalRow, InboxUpdate, PausedTurn, Turn, utcnow
from palui.db.riders import Riders, ride
from palui.domain import (
    ApprovalRecord,
    ApprovalStatus,
    Fence,
    InboxStatus,
    NewApproval,
    Taint,
    TurnStatus,
)


def _record(row: ApprovalRow) -> ApprovalRecord:
    return ApprovalRecord(
        row.id,
        row.token,
        row.turn_id,
        row.chat_id,
        row.call_id,
        row.tool,
        row.arguments,
        row.digest,
        row.tool_class,
        row.sends_out,
        row.why,
        ApprovalStatus(row.status),
        row.message_id,
        row.decided_by,
        row.created_at,
        row.expires_at,
        row.decided_at,
        row.result,
        row.model_arguments,
        row.edited_by,
        row.edited_at,
        row.decided_on,
    )


class ApprovalRepo:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def pause_turn(
        self,
        turn_id: str,
        chat_id: int,
        state: str,
        approvals: Sequence[NewApproval],
        *,
        update_ids: Sequence[int] = (),
        taint: Taint | None = None,
        fence: Fence | None = None,
        riders: Riders | None = None,
    ) -> None:
        """Store the paused turn and its approvals; the messages it answers are now handled,
        and what the turn owes besides (`riders`: its token usage so far) is written along.
        Under a `fence`, nothing is stored once the chat's lease was taken over (`LeaseLost`)."""
        async with self._db.session() as s, s.begin():
            await check(s, fence)
            turn = await s.get_one(Turn, turn_id)
            turn.status = TurnStatus.AWAITING_APPROVAL
            turn.tainted = taint is not None
            turn.taint_source = taint.label if taint else None
            existing = await s.get(PausedTurn, turn_id)
            if existing is None:
                s.add(PausedTurn(turn_id=turn_id, chat_id=chat_id, state=state))
            else:
                existing.state, existing.claimed_at = state, None
            for a in approvals:
                s.add(
                    ApprovalRow(
                        id=a.id,
                        token=a.token,
                        turn_id=turn_id,
                        chat_id=chat_id,
                        call_id=a.call_id,
                        tool=a.tool,
                        arguments=a.arguments,
                        digest=a.digest,
                        tool_class=a.tool_class,
                        sends_out=a.sends_out,
                        why=a.why,
                        decision_id=a.decision_id,
                        status=ApprovalStatus.PENDING,
                        created_at=utcnow(),
                        expires_at=a.expires_at,
                    )
                )
            if update_ids:
                await s.execute(
                    update(InboxUpdate)
                    .where(InboxUpdate.update_id.in_(list(update_ids)))
                    .values(status=InboxStatus.DONE, handled_at=utcnow(), turn_id=turn_id)
                )
            await ride(s, riders)

    async def set_message(self, approval_id: str, message_id: int) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(ApprovalRow)
                .where(ApprovalRow.id == approval_id)
                .values(message_id=message_id)
            )

    async def by_token(self, token: str) -> ApprovalRecord | None:
        async with self._db.session() as s:
            row = await s.scalar(select(ApprovalRow).where(ApprovalRow.token == token))
        return _record(row) if row else None

    async def by_id(self, approval_id: str) -> ApprovalRecord | None:
        async with self._db.session() as s:
            row = await s.get(ApprovalRow, approval_id)
        return _record(row) if row else None

    async def for_turn(self, turn_id: str) -> list[ApprovalRecord]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ApprovalRow)
                .where(ApprovalRow.turn_id == turn_id)
                .order_by(ApprovalRow.created_at)
            )
            return [_record(r) for r in rows]

    async def pending(self, chat_id: int | None = None) -> list[ApprovalRecord]:
        query = select(ApprovalRow).where(ApprovalRow.status == ApprovalStatus.PENDING)
        if chat_id is not None:
            query = query.where(ApprovalRow.chat_id == chat_id)
        async with self._db.session() as s:
            return [_record(r) for r in await s.scalars(query.order_by(ApprovalRow.created_at))]

    async def decide(
        self, approval_id: str, approve: bool, by: str, now: datetime, *, on: str | None = None
    ) -> bool:
        """Record a tap (`on="web"`: a press in the web console); False when the card was
        already decided or has expired."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(ApprovalRow)
                .where(
                    ApprovalRow.id == approval_id,
                    ApprovalRow.status == ApprovalStatus.PENDING,
                    ApprovalRow.expires_at > now,
                )
                .values(
                    status=ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED,
                    decided_by=by,
                    decided_on=on,
                    decided_at=now,
                )
            )
        return bool(getattr(result, "rowcount", 0))

    async def expire_due(self, now: datetime) -> list[ApprovalRecord]:
        """Mark every pending approval past its time as expired; return them."""
        async with self._db.session() as s, s.begin():
            rows = list(
                await s.scalars(
                    select(ApprovalRow).where(
                        ApprovalRow.status == ApprovalStatus.PENDING, ApprovalRow.expires_at <= now
                    )
                )
            )
            expired = []
            for row in rows:
                result = await s.execute(
                    update(ApprovalRow)
                    .where(ApprovalRow.id == row.id, ApprovalRow.status == ApprovalStatus.PENDING)
                    .values(status=ApprovalStatus.EXPIRED, decided_at=now)
                )
                if getattr(result, "rowcount", 0):
                    row.status = ApprovalStatus.EXPIRED
                    expired.append(_record(row))
        return expired

    async def claim_execution(self, approval_id: str, fence: Fence | None = None) -> bool:
        """approved -> executing, once: the approval is used up before the call goes out.
        Under a `fence`, only while the chat's lease is still that take (else `LeaseLost`)."""
        claim = update(ApprovalRow).where(
            ApprovalRow.id == approval_id, ApprovalRow.status == ApprovalStatus.APPROVED
        )
        if fence is not None:
            claim = claim.where(held_by(fence))  # folded in: no extra statement when it holds
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                claim.values(status=ApprovalStatus.EXECUTING).execution_options(
                    synchronize_session=False
                )
            )
            claimed = bool(getattr(result, "rowcount", 0))
            if not claimed:
                await check(s, fence)  # why not: taken over, or used up already
        return claimed

    async def executed(self, approval_id: str, result: str) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(ApprovalRow)
                .where(ApprovalRow.id == approval_id)
                .values(status=ApprovalStatus.EXECUTED, result=result)
            )

    async def recent_executed_digests(self, chat_id: int, since: datetime) -> set[str]:
        """Digests of calls a person approved in this chat that ran since `since`."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ApprovalRow.digest).where(
                    ApprovalRow.chat_id == chat_id,
                    ApprovalRow.status == ApprovalStatus.EXECUTED,
                    ApprovalRow.decided_at >= since,
                )
            )
            return set(rows)

    # -- paused turns ------------------------------------------------------------------------

    async def resumable(self, chat_id: int) -> list[str]:
        """Paused turns of the chat, unclaimed, none of whose approvals is still pending."""
        async with self._db.session() as s:
            paused = list(
                await s.scalars(
                    select(PausedTurn.turn_id)
                    .where(PausedTurn.chat_id == chat_id, PausedTurn.claimed_at.is_(None))
                    .order_by(PausedTurn.created_at)
                )
            )
            waiting = set(
                await s.scalars(
                    select(ApprovalRow.turn_id).where(
                        ApprovalRow.turn_id.in_(paused),
                        ApprovalRow.status == ApprovalStatus.PENDING,
                    )
                )
            )
        return [turn_id for turn_id in paused if turn_id not in waiting]

    async def claim_resume(self, turn_id: str) -> str | None:
        """Take a paused turn to resume it (once, in one process); returns its state."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(PausedTurn)
                .where(PausedTurn.turn_id == turn_id, PausedTurn.claimed_at.is_(None))
                .values(claimed_at=utcnow())
            )
            if not getattr(result, "rowcount", 0):
                return None
            return await s.scalar(select(PausedTurn.state).where(PausedTurn.turn_id == turn_id))

    async def chats_with_paused_turns(self) -> list[int]:
        async with self._db.session() as s:
            return list(set(await s.scalars(select(PausedTurn.chat_id))))

    async def listed(
        self, chat_ids: Collection[int], *, pending: bool, limit: int = 100
    ) -> list[ApprovalRecord]:
        """The chats' pending approvals (oldest first), or their decided ones (newest first)."""
        query = select(ApprovalRow).where(ApprovalRow.chat_id.in_(list(chat_ids)))
        if pending:
            query = query.where(ApprovalRow.status == ApprovalStatus.PENDING)
            query = query.order_by(ApprovalRow.created_at)
        else:
            query = query.where(ApprovalRow.status != ApprovalStatus.PENDING)
            query = query.order_by(ApprovalRow.created_at.desc())
        async with self._db.session() as s:
            return [_record(r) for r in await s.scalars(query.limit(limit))]
