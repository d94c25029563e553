"""The outbox: replies committed before they are sent, and how many of each one's parts are
already in the chat (so a restart sends the rest, never a part twice)."""

from __future__ import annotations

import asyncio

from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from palui.db.models import OutboxMessage, utcnow
from palui.db.repo import Repo
from palui.domain import OutboxItem

RECORD_ATTEMPTS = 4


class OutboxRepo(Repo):
    async def add(self, chat_id: int, text: str) -> int:
        async with self._db.session() as s, s.begin():
            row = OutboxMessage(chat_id=chat_id, text=text)
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
                OutboxItem(r.id, r.chat_id, r.text, r.parts_sent, r.edit_message_id, r.reply_to)
                for r in rows
            ]

    async def part_sent(self, outbox_id: int, parts_sent: int, *, done: bool) -> None:
        """Record delivered parts. The part is already in the chat, so a failure here would make
        the sweeper send it again: a busy database gets a few more tries first."""
        for attempt in range(RECORD_ATTEMPTS):
            try:
                async with self._db.session() as s, s.begin():
                    await s.execute(
                        update(OutboxMessage)
                        .where(OutboxMessage.id == outbox_id)
                        .values(parts_sent=parts_sent, sent_at=utcnow() if done else None)
                    )
                return
            except OperationalError:
                if attempt + 1 == RECORD_ATTEMPTS:
                    raise
                await asyncio.sleep(0.2 * 2**attempt)
