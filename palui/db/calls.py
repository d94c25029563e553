"""The repository of tool call records (one row per call, `CallRecordRow`): the writes that
`palui.tools.record` makes, the daily send count, and settling calls a dead process left in
flight. Nothing else writes the table (tests/db/test_call_record.py checks)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.leases import fence_params, fenced_insert_params, held_by_params
from palui.db.models import CallRecordRow, SendCapNotice, utcnow
from palui.db.repo import Repo, insert_params
from palui.db.riders import Riders, ride
from palui.domain import CallChange, CallStage, CallStatus, Fence, StageEntry
from palui.domain.turn_record import CallKey
from palui.errors import LeaseLost

INTERRUPTED = "interrupted by a restart"
CALLS = cast(Table, CallRecordRow.__table__)
COLUMNS = CALLS.columns
VALUES = tuple(c.key for c in COLUMNS if c.key != "id")  # what a write sets: all but the id

# Built once, run with a dict of the row's values: a statement built per call costs several
# times its run in SQLAlchemy's CPU (palui.db.leases). Keyed by "under a fence".
_BY_ID = select(CALLS).where(CALLS.c.id == bindparam("row_id"))
_BY_CALL = (
    select(CALLS)
    .where(
        CALLS.c.turn_id == bindparam("turn_id"),
        CALLS.c.step == bindparam("step"),
        CALLS.c.call_id == bindparam("call_id"),
    )
    .order_by(CALLS.c.id.desc())
    .limit(1)
)
_INSERT = {
    False: insert_params(CALLS, VALUES).returning(CALLS.c.id),
    True: fenced_insert_params(CallRecordRow, VALUES).returning(CALLS.c.id),
}
_UPDATE = {
    fenced: update(CALLS)
    .where(CALLS.c.id == bindparam("row_id"), *([held_by_params()] if fenced else []))
    .values({k: bindparam(k) for k in VALUES})
    .returning(CALLS.c.id)
    for fenced in (False, True)
}


class CallRecordRepo(Repo):
    """Implements `palui.tools.record.CallStore`."""

    async def save(
        self,
        key: CallKey,
        change: CallChange,
        *,
        earlier: Sequence[CallChange] = (),
        row_id: int | None = None,
        fresh: bool = False,
        riders: Riders | None = None,
        fence: Fence | None = None,
    ) -> int:
        """Apply `earlier` changes, then `change`, to the record of the call `key` names in
        one transaction, creating it at the call's first stage; the record's id. `fresh`:
        the caller knows no record exists yet (one INSERT, no lookup); `row_id`: it knows the
        record. `riders`: what the turn owes besides (palui.db.riders), written along. Under a
        `fence` the record's own INSERT or UPDATE carries the lease condition: `LeaseLost`."""
        now = utcnow()
        async with self._db.session() as s, s.begin():
            found = None
            if row_id is not None:
                found = (await s.execute(_BY_ID, {"row_id": row_id})).mappings().one_or_none()
            elif not fresh:
                by_call = {"turn_id": key.turn_id, "step": key.step, "call_id": key.call_id[:128]}
                found = (await s.execute(_BY_CALL, by_call)).mappings().first()
            if found is None:
                first_at = (earlier[0].at if earlier else None) or now
                known, row = None, _new_row(key, change.tool, first_at)
            else:
                row = dict(found)
                known = row.pop("id")
            for each in (*earlier, change):
                _apply(row, each, each.at or now)
            params = row if fence is None else {**row, **fence_params(fence)}
            if known is None:
                saved = await s.execute(_INSERT[fence is not None], params)
            else:
                saved = await s.execute(_UPDATE[fence is not None], {**params, "row_id": known})
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

    async def sends_since(self, since: datetime, exempt: Collection[str] = ()) -> int:
        """Calls that sent a message to someone (a write or destructive call of a tool that
        sends out; NULL class: destructive) which went out (or started to) since `since`, but
        for the `exempt` tools."""
        row = CallRecordRow
        query = select(func.count()).where(
            row.sends_out.is_(True),
            row.started_at >= since,
            or_(row.tool_class.is_(None), row.tool_class != "read"),
        )
        if exempt:
            query = query.where(row.tool.not_in(list(exempt)))
        async with self._db.session() as s:
            count = await s.scalar(query)
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
        key: CallKey,
        change: CallChange,
        *,
        earlier: Sequence[CallChange] = (),
        row_id: int | None = None,
        fresh: bool = False,
        riders: Riders | None = None,
    ) -> int:
        return await self._repo.save(
            key,
            change,
            earlier=earlier,
            row_id=row_id,
            fresh=fresh,
            riders=riders,
            fence=self._fence,
        )

    async def sends_since(self, since: datetime, exempt: Collection[str] = ()) -> int:
        return await self._repo.sends_since(since, exempt)

    async def first_cap_notice(self, chat_id: int, day: str) -> bool:
        return await self._repo.first_cap_notice(chat_id, day)


def _new_row(key: CallKey, tool: str, created_at: datetime) -> dict[str, Any]:
    """A new call's record before its first change, every column but the id."""
    return {
        "turn_id": key.turn_id,
        "chat_id": key.chat_id,
        "step": key.step,
        "call_id": key.call_id[:128],
        "tool": tool[:128],
        "tool_class": None,
        "class_source": None,
        "sends_out": False,
        "arguments": "",
        "model_arguments": None,
        "decision": None,
        "decision_id": None,
        "reason": None,
        "status": CallStatus.PENDING,
        "result": None,
        "stages": "[]",
        "created_at": created_at,
        "started_at": None,
        "ended_at": None,
        "duration_ms": None,
    }


def _apply(row: dict[str, Any], change: CallChange, now: datetime) -> None:
    columns = {
        "status": change.status,
        "tool_class": change.tool_class,
        "class_source": change.class_source,
        "sends_out": change.sends_out,
        "arguments": change.arguments,
        "model_arguments": change.model_arguments,
        "decision": change.decision,
        "decision_id": change.decision_id,
        "reason": change.reason,
        "result": change.result,
    }
    for name, value in columns.items():
        if value is not None:
            row[name] = value
    if change.went_out:
        row["started_at"] = now
    if change.duration_s is not None:
        row["duration_ms"] = round(change.duration_s * 1000)
        row["ended_at"] = now
    if change.stage is not None:
        stages = json.loads(row["stages"] or "[]")
        entry = _entry(change.stage, now)
        if change.settles and stages and stages[-1]["stage"] == CallStage.EXECUTE:
            # Keeps when the call went out and with which arguments.
            kept = {"at": stages[-1]["at"], "detail": stages[-1]["detail"] or entry["detail"]}
            stages[-1] = {**entry, **kept}
        else:
            stages.append(entry)
        row["stages"] = json.dumps(stages, ensure_ascii=False, default=str)


def _entry(stage: StageEntry, now: datetime) -> dict[str, Any]:
    duration = None if stage.duration_s is None else round(stage.duration_s * 1000)
    return {
        "stage": str(stage.stage),
        "outcome": stage.outcome[:24],
        "reason": stage.reason,
        "detail": stage.detail,
        "at": now.isoformat(),
        "duration_ms": duration,
    }


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
        values = {k: getattr(row, k) for k in VALUES}
        # The stage keeps its start time; a crash leaves no duration to tell.
        _apply(
            values,
            CallChange(
                row.tool, stage, settles=True, status=CallStatus.UNKNOWN, result=INTERRUPTED
            ),
            utcnow(),
        )
        values["ended_at"] = utcnow()
        for name, value in values.items():
            if value != getattr(row, name):
                setattr(row, name, value)
    return len(rows)
