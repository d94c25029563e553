"""Strangers: people not on the allow-list get one refusal a day, however often they write."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update

from palui.db.models import StrangerNotice
from palui.db.repo import Repo


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
