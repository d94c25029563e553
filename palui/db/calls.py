"""The repository of tool call records (one row per call, `CallRecordRow`): the writes that
`palui.tools.record` makes, the daily send count, and settling calls a dead process left in
flight. Nothing else writes the table (tests/test_call_record.py checks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import CallRecordRow, SendCapNotice, utcnow
from palui.db.repo import Repo
from palui.db.riders import Riders, ride
from palui.domain import CallChange, CallStage, CallStatus, StageEntry

INTERRUPTED = "interrupted by a restart"


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
    ) -> int:
        """Apply `earlier` changes, then `change`, to the call's record in one transaction,
        creating it at the call's first stage; the record's id.

        A call is keyed by turn, model step and call id: a held call's record is the one its
        approval and execution are added to when the turn resumes, in any process. `fresh`:
        the caller knows no record exists yet (one INSERT, no lookup); `row_id`: it knows the
        record. `riders`: what the turn owes besides (palui.db.riders), written along."""
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
                    arguments="", sends_out=False,
                    created_at=(earlier[0].at if earlier else None) or now,
                )  # fmt: skip
                s.add(row)
            for each in (*earlier, change):
                _apply(row, each, each.at or now)
            await ride(s, riders)
            await s.flush()
            return row.id

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
