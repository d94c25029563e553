"""The repository of tool call records (one row per call, `CallRecordRow`): the writes that
`palui.tools.record` makes, the daily send count, and settling calls a dead process left in
flight. Nothing else writes the table (tests/test_call_record.py checks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.leases import fenced_insert, held_by
from palui.db.models import CallRecordRow, SendCapNotice, utcnow
from palui.db.repo import Repo
from palui.db.riders import Riders, ride
from palui.domain import CallChange, CallStage, CallStatus, Fence, StageEntry
from palui.errors import LeaseLost

INTERRUPTED = "interrupted by a restart"
COLUMNS = CallRecordRow.__table__.columns


class CallRecordRepo(Repo):
    """Implements `palui.tools.record.CallStore`."""

    async def save(
        self,
        turn_id: str,
        chat_id: int,
        step: int,
        call_id: str,
        change: CallChange,
        *,
        earlier: Sequence[CallChange] = (),
        row_id: int | None = None,
        fresh: bool = False,
        riders: Riders | None = None,
        fence: Fence | None = None,
    ) -> int:
        """Apply `earlier` changes, then `change`, to the call's record in one transaction,
        creating it at the call's first stage; the record's id.

        A call is keyed by turn, model step and call id: a held call's record is the one its
        approval and execution are added to when the turn resumes, in any process. `fresh`:
        the caller knows no record exists yet (one INSERT, no lookup); `row_id`: it knows the
        record. `riders`: what the turn owes besides (palui.db.riders), written along. Under a
        `fence` the record's own INSERT or UPDATE carries the lease condition: `LeaseLost`."""
        now = utcnow()
        async with self._db.session() as s, s.begin():
            row: CallRecordRow | None = None
            if row_id is not None:
                row = await s.get(CallRecordRow, row_id)
            elif not fresh:
                row = await s.scalar(
                    select(CallRecordRow)
                    .where(
                        CallRecordRow.turn_id == turn_id,
                        CallRecordRow.step == step,
                        CallRecordRow.call_id == call_id[:128],
                    )
                    .order_by(CallRecordRow.id.desc())
                    .limit(1)
                )
            if row is None:
                row = CallRecordRow(
                    turn_id=turn_id, chat_id=chat_id, step=step, call_id=call_id[:128],
                    tool=change.tool[:128], status=CallStatus.PENDING, stages="[]",
                    arguments="", sends_out=False, model_arguments=None, tool_class=None,
                    decision=None, decision_id=None, reason=None, result=None,
                    created_at=(earlier[0].at if earlier else None) or now, started_at=None,
                    ended_at=None, duration_ms=None,
                )  # fmt: skip
            else:
                s.expunge(row)  # changed here, written below by one statement of ours
            for each in (*earlier, change):
                _apply(row, each, each.at or now)
            saved = await s.execute(_write(row, fence).returning(CallRecordRow.id))
            saved_id = saved.scalar_one_or_none()
            if saved_id is None:
                assert fence is not None  # an unfenced write always lands
                raise LeaseLost(fence.chat_id)
            await ride(s, riders)
            return int(saved_id)

    def fenced(self, fence: Fence | None) -> CallRecordRepo | FencedCalls:
        """The records as a turn run under `fence` writes them: refused (`LeaseLost`) once
        another process took the chat's lease over, so a stale holder changes no record."""
        return self if fence is None else FencedCalls(self, fence)

    async def sends_since(self, since: datetime) -> int:
        """Calls of tools that send out which went out (or started to) since `since`."""
        async with self._db.session() as s:
            count = await s.scalar(
                select(func.count()).where(
                    CallRecordRow.sends_out.is_(True), CallRecordRow.started_at >= since
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


class FencedCalls:
    """One turn's view of the call records (a `palui.tools.record.CallStore`): its writes
    under its fence."""

    def __init__(self, repo: CallRecordRepo, fence: Fence) -> None:
        self._repo = repo
        self._fence = fence

    async def save(
        self,
        turn_id: str,
        chat_id: int,
        step: int,
        call_id: str,
        change: CallChange,
        *,
        earlier: Sequence[CallChange] = (),
        row_id: int | None = None,
        fresh: bool = False,
        riders: Riders | None = None,
    ) -> int:
        return await self._repo.save(
            turn_id, chat_id, step, call_id, change, earlier=earlier, row_id=row_id,
            fresh=fresh, riders=riders, fence=self._fence,
        )  # fmt: skip

    async def sends_since(self, since: datetime) -> int:
        return await self._repo.sends_since(since)

    async def first_cap_notice(self, chat_id: int, day: str) -> bool:
        return await self._repo.first_cap_notice(chat_id, day)


def _write(row: CallRecordRow, fence: Fence | None) -> Any:
    """The record as one INSERT (a new call) or UPDATE (a known one), conditional on `fence`."""
    values = {c.key: getattr(row, c.key) for c in COLUMNS if c.key != "id"}
    if row.id is None:
        if fence is None:
            return insert(CallRecordRow).values(values)
        return fenced_insert(CallRecordRow, values, fence)
    write = update(CallRecordRow).where(CallRecordRow.id == row.id)
    if fence is not None:
        write = write.where(held_by(fence))
    return write.values(values).execution_options(synchronize_session=False)


def _apply(row: CallRecordRow, change: CallChange, now: datetime) -> None:
    columns = {
        "status": change.status, "tool_class": change.tool_class, "sends_out": change.sends_out,
        "arguments": change.arguments, "model_arguments": change.model_arguments,
        "decision": change.decision, "decision_id": change.decision_id, "reason": change.reason,
        "result": change.result,
    }  # fmt: skip
    for name, value in columns.items():
        if value is not None:
            setattr(row, name, value)
    if change.went_out:
        row.started_at = now
    if change.duration_s is not None:
        row.duration_ms = round(change.duration_s * 1000)
        row.ended_at = now
    if change.stage is not None:
        stages = json.loads(row.stages or "[]")
        entry = _entry(change.stage, now)
        if change.settles and stages and stages[-1]["stage"] == CallStage.EXECUTE:
            # Keeps when the call went out and with which arguments.
            kept = {"at": stages[-1]["at"], "detail": stages[-1]["detail"] or entry["detail"]}
            stages[-1] = {**entry, **kept}
        else:
            stages.append(entry)
        row.stages = json.dumps(stages, ensure_ascii=False, default=str)


def _entry(stage: StageEntry, now: datetime) -> dict[str, Any]:
    duration = None if stage.duration_s is None else round(stage.duration_s * 1000)
    return {
        "stage": str(stage.stage), "outcome": stage.outcome[:24], "reason": stage.reason,
        "detail": stage.detail, "at": now.isoformat(), "duration_ms": duration,
    }  # fmt: skip


async def settle_interrupted(s: AsyncSession, turn_ids: Sequence[str]) -> int:
    """In recovery's transaction: the calls of these turns still running are settled as
    unknown (the action may or may not have happened; never re-fired). How many."""
    rows = list(
        await s.scalars(
            select(CallRecordRow).where(
                CallRecordRow.turn_id.in_(turn_ids), CallRecordRow.status == CallStatus.RUNNING
            )
        )
    )
    reason = f"{INTERRUPTED}: the action may or may not have happened"
    stage = StageEntry(CallStage.EXECUTE, str(CallStatus.UNKNOWN), reason)
    for row in rows:
        # The stage keeps its start time; a crash leaves no duration to tell.
        _apply(row, CallChange(row.tool, stage, settles=True, status=CallStatus.UNKNOWN,
                               result=INTERRUPTED), utcnow())  # fmt: skip
        row.ended_at = utcnow()
    return len(rows)
