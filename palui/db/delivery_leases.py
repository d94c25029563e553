"""Delivery leases: one process at a time sends a chat's outbox (DESIGN §3, several processes).

Replies are committed to the shared outbox and any process may deliver them (after its own turn,
a command, a tap, its start-up or its retry sweep). Without a lease two processes could send the
same reply part at once; with it the others leave the chat's outbox to the holder, which reads
it again until it is empty. The rows behave exactly like chat leases, in their own table.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, or_, select

from palui.db.leases import LeaseRepo
from palui.db.models import DeliveryLease, utcnow


class DeliveryLeaseRepo(LeaseRepo):
    async def acquire(self, chat_id: int, holder: str, ttl_s: float) -> bool:
        now = utcnow()
        stmt = self._insert(DeliveryLease).values(
            chat_id=chat_id, holder=holder, expires_at=now + timedelta(seconds=ttl_s)
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["chat_id"],
            set_={"holder": stmt.excluded.holder, "expires_at": stmt.excluded.expires_at},
            where=or_(DeliveryLease.holder == holder, DeliveryLease.expires_at < now),
        )
        async with self._db.session() as s, s.begin():
            taken = (await s.execute(stmt.returning(DeliveryLease.holder))).scalar_one_or_none()
        return taken is not None

    async def release(self, chat_id: int, holder: str) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                delete(DeliveryLease).where(
                    DeliveryLease.chat_id == chat_id, DeliveryLease.holder == holder
                )
            )

    async def holders(self) -> list[tuple[int, str]]:
        async with self._db.session() as s:
            rows = await s.execute(select(DeliveryLease.chat_id, DeliveryLease.holder))
            return [(chat_id, holder) for chat_id, holder in rows]
