"""Chat leases: one process at a time runs a chat's turns (DESIGN §3, several processes).

A lease row names its holder and when it lapses. Taking it is one upsert that succeeds only when
the row is free, lapsed, or already ours, so two processes can never both hold it; a holder that
dies stops renewing and the lease lapses on its own.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, or_, select

from palui.db.models import ChatLease, DeliveryLease, utcnow
from palui.db.repo import Repo


class LeaseRepo(Repo):
    table: type[ChatLease] | type[DeliveryLease] = ChatLease

    async def acquire(self, chat_id: int, holder: str, ttl_s: float) -> bool:
        """Take or renew the chat's lease for `ttl_s` seconds; False when another holds it."""
        now = utcnow()
        stmt = self._insert(self.table).values(
            chat_id=chat_id, holder=holder, expires_at=now + timedelta(seconds=ttl_s)
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["chat_id"],
            set_={"holder": stmt.excluded.holder, "expires_at": stmt.excluded.expires_at},
            where=or_(self.table.holder == holder, self.table.expires_at < now),
        )
        async with self._db.session() as s, s.begin():
            # RETURNING, not rowcount: asyncpg reports no reliable rowcount for an upsert.
            taken = (await s.execute(stmt.returning(self.table.holder))).scalar_one_or_none()
        return taken is not None

    async def release(self, chat_id: int, holder: str) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                delete(self.table).where(self.table.chat_id == chat_id, self.table.holder == holder)
            )

    async def holders(self) -> list[tuple[int, str]]:
        """(chat_id, holder) of every lease row, lapsed or not."""
        async with self._db.session() as s:
            rows = await s.execute(select(self.table.chat_id, self.table.holder))
            return [(chat_id, holder) for chat_id, holder in rows]
