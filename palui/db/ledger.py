"""The action ledger (DESIGN §1.6 step 4): a world-changing call is claimed before it goes out.

    (none) --claim--> in_progress --> completed | failed | unknown
    failed --claim--> in_progress   (a failed action may run again)
Within the window an identical call (same chat, tool, canonical arguments) gets the recorded
result (completed), is not started (in_progress), or is reported as unknown, never re-fired.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from palui.db.engine import Database
from palui.db.leases import check, held_by
from palui.db.models import ActionRow, utcnow
from palui.domain import ActionState, Claim, Fence
from palui.errors import LeaseLost
from palui.ports import Ledger


class ActionLedger:
    def __init__(self, db: Database, window: timedelta = timedelta(minutes=10)) -> None:
        self._db = db
        self._window = window

    def fenced(self, fence: Fence | None) -> Ledger:
        """The ledger as a turn run under `fence` uses it: its claims are refused
        (`LeaseLost`) once another process took the chat's lease over."""
        return self if fence is None else FencedLedger(self, fence)

    async def claim(
        self,
        key: str,
        chat_id: int,
        tool: str,
        arguments: str,
        turn_id: str | None,
        fence: Fence | None = None,
    ) -> Claim:
        now = utcnow()
        async with self._db.session() as s, s.begin():
            latest = await s.scalar(
                select(ActionRow)
                .where(ActionRow.key == key, ActionRow.created_at >= now - self._window)
                .order_by(ActionRow.id.desc())
                .limit(1)
            )
            if latest is not None and latest.state != ActionState.FAILED:
                return Claim(ActionState(latest.state), latest.id, latest.result, latest.updated_at)
            if latest is not None:
                await check(s, fence)
                result = await s.execute(
                    update(ActionRow)
                    .where(ActionRow.id == latest.id, ActionRow.state == ActionState.FAILED)
                    .values(state=ActionState.IN_PROGRESS, turn_id=turn_id, updated_at=now)
                )
                if getattr(result, "rowcount", 0):
                    return Claim(ActionState.NEW, latest.id)
                return Claim(ActionState.IN_PROGRESS, latest.id)
        slot = int(now.timestamp() // self._window.total_seconds())
        try:
            async with self._db.session() as s, s.begin():
                await check(s, fence)  # in the claim's transaction: no stale claim commits
                row = ActionRow(
                    key=key,
                    slot=slot,
                    chat_id=chat_id,
                    tool=tool[:128],
                    arguments=arguments,
                    state=ActionState.IN_PROGRESS,
                    turn_id=turn_id,
                    created_at=now,
                    updated_at=now,
                )
                s.add(row)
                await s.flush()
                return Claim(ActionState.NEW, row.id)
        except IntegrityError:
            return Claim(ActionState.IN_PROGRESS)  # another caller claimed it a moment ago

    async def settle(
        self, action_id: int, state: str, result: str, fence: Fence | None = None
    ) -> None:
        """How the claimed call ended. Under `fence` the UPDATE carries the lease condition:
        a holder that stalled past its lapse leaves the action as recovery settled it
        (unknown, never re-fired) and gets `LeaseLost`."""
        settle = update(ActionRow).where(ActionRow.id == action_id)
        if fence is not None:
            settle = settle.where(held_by(fence))
        settle = settle.values(state=state, result=result, updated_at=utcnow())
        async with self._db.session() as s, s.begin():
            settled = await s.execute(settle.returning(ActionRow.id))
            if fence is not None and settled.scalar_one_or_none() is None:
                raise LeaseLost(fence.chat_id)


class FencedLedger:
    """One turn's view of the ledger (implements `palui.ports.Ledger`): claims under its fence."""

    def __init__(self, ledger: ActionLedger, fence: Fence) -> None:
        self._ledger = ledger
        self._fence = fence

    async def claim(
        self, key: str, chat_id: int, tool: str, arguments: str, turn_id: str | None
    ) -> Claim:
        return await self._ledger.claim(key, chat_id, tool, arguments, turn_id, self._fence)

    async def settle(self, action_id: int, state: str, result: str) -> None:
        await self._ledger.settle(action_id, state, result, self._fence)
