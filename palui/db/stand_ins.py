"""Days a fallback model stood in for a primary that refused the key (`Completion.stood_in`):
the chat's notice is queued in the same transaction as the day's row, so it is told exactly once
a day whichever process ran the turn, and /status reads the newest."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from palui.db.models import ModelStandIn, OutboxMessage, utcnow
from palui.db.repo import Repo
from palui.domain import StandIn


@dataclass(frozen=True, slots=True)
class StandInRecord:
    chat_id: int
    stand_in: StandIn
    at: datetime


class StandInRepo(Repo):
    async def tell_once(self, chat_id: int, day: str, stand_in: StandIn, text: str) -> bool:
        """Record today's stand-in for the chat and queue `text` for it, the first time today
        only; whether this was the first time."""
        async with self._db.session() as s, s.begin():
            inserted = await s.execute(
                self._insert(ModelStandIn)
                .values(
                    chat_id=chat_id,
                    day=day,
                    primary_model=stand_in.primary[:200],
                    model=stand_in.model[:200],
                    reason=stand_in.reason,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["chat_id", "day"])
            )
            if not getattr(inserted, "rowcount", 0):
                return False
            s.add(OutboxMessage(chat_id=chat_id, text=text))
            return True

    async def newest(self, since: datetime) -> StandInRecord | None:
        async with self._db.session() as s:
            row = await s.scalar(
                select(ModelStandIn)
                .where(ModelStandIn.created_at >= since)
                .order_by(ModelStandIn.created_at.desc())
                .limit(1)
            )
        if row is None:
            return None
        stand_in = StandIn(row.primary_model, row.model, row.reason)
        return StandInRecord(row.chat_id, stand_in, row.created_at)
