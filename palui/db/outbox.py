"""The outbox: replies committed before they are sent, and how many of each one's parts are
already in the chat (so a restart sends the rest, never a part twice), and the message the
newest of them became (where a search for a part sent but not recorded starts,
`palui.db.outbox_search`)."""

from __future__ import annotations

import asyncio

from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from palui.db.leases import held_by
from palui.db.models import ChatLease, DeliveryLease, OutboxMessage, utcnow
from palui.db.outbox_search import Lookup, where_to_look
from palui.db.repo import Repo
from palui.domain import Fence, OutboxItem
from palui.errors import LeaseLost

RECORD_ATTEMPTS = 4


class OutboxRepo(Repo):
    async def add(self, chat_id: int, text: str, *, sender: str | None = None) -> int:
        """`sender`: the process storing it (its lease holder name)."""
        async with self._db.session() as s, s.begin():
            row = OutboxMessage(chat_id=chat_id, text=text, sender=sender)
            s.add(row)
            await s.flush()
            return row.id

    async def pending(self, chat_id: int | None = None) -> list[OutboxItem]:
        query = select(OutboxMessage).where(OutboxMessage.sent_at.is_(None))
        if chat_id is not None:
            query = query.where(OutboxMessage.chat_id == chat_id)
        async with self._db.session() as s:
            rows = await s.scalars(query.order_by(OutboxMessage.id))
            return [
                OutboxItem(
                    r.id,
                    r.chat_id,
                    r.text,
                    r.parts_sent,
                    r.edit_message_id,
                    r.reply_to,
                    r.created_at,
                    r.sender,
                )
                for r in rows
            ]

    async def part_sent(
        self,
        outbox_id: int,
        parts_sent: int,
        *,
        done: bool,
        fence: Fence | None = None,
        chat_lease: bool = False,
        message_id: int | None = None,
    ) -> None:
        """Record delivered parts. The part is already in the chat, so a failure here would make
        the sweeper send it again: a busy database gets a few more tries first. Under a `fence`
        (the chat's delivery lease, or with `chat_lease` the chat's own lease its worker sends
        under), a sender whose lease was taken over records nothing and gets `LeaseLost`: the
        new holder reads the row as it stands and goes on from there. `message_id`: the message
        the part became (None where the channel has no ids), written in the same UPDATE."""
        record = update(OutboxMessage).where(OutboxMessage.id == outbox_id)
        if fence is not None:
            record = record.where(held_by(fence, ChatLease if chat_lease else DeliveryLease))
        sent_at = utcnow() if done else None
        values: dict[str, object] = {"parts_sent": parts_sent, "sent_at": sent_at}
        if message_id is not None:
            values["last_message_id"] = message_id
        record = record.values(**values)
        for attempt in range(RECORD_ATTEMPTS):
            try:
                async with self._db.session() as s, s.begin():
                    recorded = await s.execute(record.returning(OutboxMessage.id))
                    if fence is not None and recorded.scalar_one_or_none() is None:
                        raise LeaseLost(fence.chat_id, "chat" if chat_lease else "delivery")
                return
            except OperationalError:
                if attempt + 1 == RECORD_ATTEMPTS:
                    raise
                await asyncio.sleep(0.2 * 2**attempt)

    async def where_to_look(self, item: OutboxItem) -> Lookup | None:
        """Where a part of `item` that a dead sender may have sent would be (None: unknown)."""
        async with self._db.session() as s:
            return await where_to_look(s, item)
