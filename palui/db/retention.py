"""Retention: the daily prune of finished records (`[retention]` in palui.toml, DESIGN §3).

Each table is pruned in batches of `BATCH` rows: found by a read, then deleted by key in a short
transaction of its own, so the prune never holds SQLite's one write lock for long (a turn's
write waits at most one batch's delete).
Nothing pending work still needs is deleted, however old: a waiting message or webhook delivery,
an unsent reply, the records, cards and paused state of a running or paused turn, a queued job
run and each job's latest run. Turns, messages and session summaries are the chat's memory and
are not pruned; nor is the action ledger (it is what keeps an action from running twice).
A replay-protection key lives on its webhook delivery: a delivery is kept at least
`REPLAY_KEEP` (longer than a signature is accepted), whatever `webhook_days` says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, tuple_, update

from palui.db.models import (
    ApprovalEdit,
    ApprovalRow,
    CallRecordRow,
    InboxUpdate,
    JobRun,
    ModelCall,
    OutboxMessage,
    PausedTurn,
    RecallCheck,
    SendCapNotice,
    StopRequest,
    StrangerNotice,
    Turn,
    TurnOfferRow,
    UpkeepMark,
    WebhookDelivery,
    WebLink,
    WebSession,
)
from palui.db.repo import Repo
from palui.domain import (
    ApprovalStatus,
    CallStatus,
    EditStatus,
    InboxStatus,
    RunStatus,
    TurnStatus,
)

BATCH = 500
PRUNE = "retention"  # the upkeep mark's name
EVERY = timedelta(days=1)
REPLAY_KEEP = timedelta(minutes=10)
NEVER = datetime(1970, 1, 1, tzinfo=UTC)
OPEN_TURN = (TurnStatus.RUNNING, TurnStatus.AWAITING_APPROVAL)
OPEN_CALL = (CallStatus.PENDING, CallStatus.HELD, CallStatus.RUNNING)
OPEN_APPROVAL = (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.EXECUTING)

# One table's prune: its table, the key columns a batch is chosen by, the conditions.
Step = tuple[Any, Sequence[Any], list[ColumnElement[bool]]]


@dataclass(frozen=True, slots=True)
class RetentionDays:
    """Days each kind is kept (0: forever); palui.toml's `[retention]`."""

    webhook_days: int = 7
    inbox_days: int = 30
    outbox_days: int = 30
    calls_days: int = 90
    model_calls_days: int = 90
    approvals_days: int = 90
    job_runs_days: int = 90
    notices_days: int = 30


def _open_turns() -> Any:
    return select(Turn.id).where(Turn.status.in_(OPEN_TURN))


class RetentionRepo(Repo):
    async def claim_daily(self, now: datetime) -> bool:
        """Take today's prune: true for one process a day, whichever moves the mark first."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                self._insert(UpkeepMark)
                .values(name=PRUNE, last_run_at=NEVER)
                .on_conflict_do_nothing(index_elements=["name"])
            )
            moved = await s.execute(
                update(UpkeepMark)
                .where(UpkeepMark.name == PRUNE, UpkeepMark.last_run_at <= now - EVERY)
                .values(last_run_at=now)
            )
        return bool(getattr(moved, "rowcount", 0) == 1)

    async def prune(self, days: RetentionDays, now: datetime) -> dict[str, int]:
        """Delete what is past its days; the rows deleted per table."""
        deleted: dict[str, int] = {}
        for table, keys, where in self._plan(days, now):
            count = await self._delete(table, keys, where)
            if count:
                deleted[table.name] = deleted.get(table.name, 0) + count
        return deleted

    def _plan(self, days: RetentionDays, now: datetime) -> list[Step]:
        def before(kept: int) -> datetime | None:
            return None if kept == 0 else now - timedelta(days=kept)

        plan: list[Step] = []

        open_turns = _open_turns()
        if (cutoff := before(days.webhook_days)) is not None:
            cutoff = min(cutoff, now - REPLAY_KEEP)
            plan.append(
                (
                    WebhookDelivery.__table__,
                    [WebhookDelivery.id],
                    [WebhookDelivery.handled_at.is_not(None), WebhookDelivery.received_at < cutoff],
                )
            )
        if (cutoff := before(days.inbox_days)) is not None:
            plan.append(
                (
                    InboxUpdate.__table__,
                    [InboxUpdate.update_id],
                    [
                        InboxUpdate.status == InboxStatus.DONE,
                        InboxUpdate.received_at < cutoff,
                        _not_in(InboxUpdate.turn_id, open_turns),
                    ],
                )
            )
        if (cutoff := before(days.outbox_days)) is not None:
            plan.append(
                (
                    OutboxMessage.__table__,
                    [OutboxMessage.id],
                    [OutboxMessage.sent_at.is_not(None), OutboxMessage.sent_at < cutoff],
                )
            )
        if (cutoff := before(days.calls_days)) is not None:
            plan.append(
                (
                    CallRecordRow.__table__,
                    [CallRecordRow.id],
                    [
                        CallRecordRow.created_at < cutoff,
                        CallRecordRow.status.not_in(OPEN_CALL),
                        CallRecordRow.turn_id.not_in(open_turns),
                    ],
                )
            )
            plan.append(
                (RecallCheck.__table__, [RecallCheck.id], [RecallCheck.created_at < cutoff])
            )
            plan.append(  # which tools a turn was offered: kept as long as its calls
                (
                    TurnOfferRow.__table__,
                    [TurnOfferRow.id],
                    [TurnOfferRow.created_at < cutoff, _not_in(TurnOfferRow.turn_id, open_turns)],
                )
            )
        if (cutoff := before(days.model_calls_days)) is not None:
            plan.append(
                (
                    ModelCall.__table__,
                    [ModelCall.id],
                    [ModelCall.created_at < cutoff, _not_in(ModelCall.turn_id, open_turns)],
                )
            )
        if (cutoff := before(days.approvals_days)) is not None:
            plan.append(
                (
                    ApprovalRow.__table__,
                    [ApprovalRow.id],
                    [
                        ApprovalRow.created_at < cutoff,
                        ApprovalRow.status.not_in(OPEN_APPROVAL),
                        ApprovalRow.turn_id.not_in(open_turns),
                    ],
                )
            )
            plan.append(
                (
                    ApprovalEdit.__table__,
                    [ApprovalEdit.id],
                    [ApprovalEdit.updated_at < cutoff, ApprovalEdit.status != EditStatus.ASKING],
                )
            )
            plan.append(
                (
                    PausedTurn.__table__,
                    [PausedTurn.turn_id],
                    [PausedTurn.created_at < cutoff, PausedTurn.turn_id.not_in(open_turns)],
                )
            )
        if (cutoff := before(days.job_runs_days)) is not None:
            latest = select(func.max(JobRun.id)).group_by(JobRun.job_id)
            plan.append(
                (
                    JobRun.__table__,
                    [JobRun.id],
                    [
                        JobRun.claimed_at < cutoff,
                        JobRun.status != RunStatus.QUEUED,
                        JobRun.id.not_in(latest),
                        _not_in(JobRun.turn_id, open_turns),
                    ],
                )
            )
        if (cutoff := before(days.notices_days)) is not None:
            day = cutoff.date().isoformat()
            plan.append(
                (
                    StrangerNotice.__table__,
                    [StrangerNotice.user_id, StrangerNotice.day],
                    [StrangerNotice.day < day],
                )
            )
            plan.append(
                (
                    SendCapNotice.__table__,
                    [SendCapNotice.chat_id, SendCapNotice.day],
                    [SendCapNotice.day < day],
                )
            )
            plan.append(
                (
                    StopRequest.__table__,
                    [StopRequest.turn_id],
                    [StopRequest.requested_at < cutoff, StopRequest.turn_id.not_in(open_turns)],
                )
            )
        # The web console's sign-ins: a link past its ten minutes or a session past its days
        # opens nothing, so it goes at the next prune whatever `[retention]` says.
        plan.append((WebLink.__table__, [WebLink.token_hash], [WebLink.expires_at < now]))
        plan.append((WebSession.__table__, [WebSession.token_hash], [WebSession.expires_at < now]))
        return plan

    async def _delete(
        self, table: Any, keys: Sequence[Any], where: list[ColumnElement[bool]]
    ) -> int:
        """Delete the matching rows, `BATCH` at a time. The rows are found by a read (which on
        SQLite's WAL takes no lock: the scan of an unindexed column costs no writer anything),
        then deleted by key in a short transaction of their own, the conditions checked again."""
        total = 0
        while True:
            async with self._db.session() as s:
                found = (await s.execute(select(*keys).where(*where).limit(BATCH))).all()
            if not found:
                return total
            if len(keys) == 1:
                which = keys[0].in_([row[0] for row in found])
            else:
                which = tuple_(*keys).in_([tuple(row) for row in found])
            async with self._db.session() as s, s.begin():
                result = await s.execute(delete(table).where(which, *where))
            count = int(getattr(result, "rowcount", 0) or 0)
            total += count
            if len(found) < BATCH or count == 0:
                return total
            await asyncio.sleep(0)  # let turns' writes in between batches


def _not_in(column: Any, turns: Any) -> ColumnElement[bool]:
    """Not bound to an open turn (a row with no turn is bound to none)."""
    return column.is_(None) | column.not_in(turns)
