"""Inbound webhook deliveries: stored before the 202, summarised once, found again after a crash.

A delivery counts toward its webhook's rate once it is stored: the count of the webhook's
deliveries in the last minute and the insert run in one transaction, and on PostgreSQL a
transaction-scoped advisory lock per webhook name makes that count-then-insert atomic across
processes (SQLite serves one process), so every process shares the one rate.

A signed delivery carries its signature as a replay key, unique per webhook: the same delivery
sent again (a replay inside its ±5 min window) is refused by that index, in every process, and
nothing more is stored. The rows outlive the window (retention keeps days), so the key does too.

A delivery is claimed by writing the summarising turn's id on it (compare-and-set, so two workers
never both take it) and marked handled by that turn's end, in its transaction (`palui.db.turns`).
A delivery whose turn was left unfinished by a process that died, or ended waiting for the model
(`palui.turns.outage`), is taken again; one whose turn is done is only marked handled.

Each claim counts an attempt in the row, in the claim's statement (before the turn runs, so a
kill -9 counts too); a wait for the model and an orderly stop take theirs back. A delivery
attempted `MAX_ATTEMPTS` times is given up (`palui.chat.attempts`): handled, with a note.
"""

from __future__ import annotations

import zlib
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import OutboxMessage, Turn, WebhookDelivery, utcnow
from palui.db.repo import Repo
from palui.domain import Delivery, TurnStatus
from palui.errors import Replayed

RATE_WINDOW = timedelta(seconds=60)
LOCK_SPACE = 0x5A1D  # keeps our advisory-lock keys apart from anyone else's on the database


def _delivery(row: WebhookDelivery) -> Delivery:
    return Delivery(
        row.id,
        row.webhook,
        row.chat_id,
        row.instructions,
        row.content_type,
        row.body,
        row.turn_id,
        row.received_at,
        row.attempts,
    )


class WebhookRepo(Repo):
    async def add(
        self,
        webhook: str,
        chat_id: int,
        body: str,
        *,
        content_type: str,
        instructions: str,
        per_minute: int = 0,
        replay_key: str | None = None,
    ) -> int | None:
        """Store a delivery unless `per_minute` of the webhook's are already stored within the
        last 60 s (0 = no limit). Its id, or None when over the rate (nothing stored).
        Raises Replayed when the webhook already has a delivery with this `replay_key`."""
        try:
            async with self._db.session() as s, s.begin():
                if per_minute > 0 and await self._over_rate(s, webhook, per_minute):
                    return None
                row = WebhookDelivery(
                    webhook=webhook,
                    chat_id=chat_id,
                    body=body,
                    content_type=content_type,
                    instructions=instructions,
                    received_at=utcnow(),
                    replay_key=replay_key,
                )
                s.add(row)
                await s.flush()
                return row.id
        except IntegrityError:
            if replay_key is None:
                raise
            raise Replayed(webhook) from None

    async def _over_rate(self, s: AsyncSession, webhook: str, per_minute: int) -> bool:
        if not self._db.is_sqlite:
            key = zlib.crc32(webhook.encode()) & 0x7FFFFFFF  # an int4
            await s.execute(select(func.pg_advisory_xact_lock(LOCK_SPACE, key)))
        recent = await s.scalar(
            select(func.count()).where(
                WebhookDelivery.webhook == webhook,
                WebhookDelivery.received_at > utcnow() - RATE_WINDOW,
            )
        )
        return int(recent or 0) >= per_minute

    async def pending(self, chat_id: int) -> list[Delivery]:
        """The chat's deliveries still to summarise, oldest first.

        Skips one whose turn is running (another worker has it); marks handled one whose turn
        ended (the process died between the turn's commit and this mark)."""
        async with self._db.session() as s, s.begin():
            rows = (
                await s.execute(
                    select(WebhookDelivery, Turn.status)
                    .outerjoin(Turn, Turn.id == WebhookDelivery.turn_id)
                    .where(
                        WebhookDelivery.chat_id == chat_id,
                        WebhookDelivery.handled_at.is_(None),
                    )
                    .order_by(WebhookDelivery.id)
                )
            ).all()
            waiting = []
            for row, status in rows:
                if status == TurnStatus.RUNNING:
                    continue
                if status == TurnStatus.DONE:
                    row.handled_at = utcnow()
                    continue
                waiting.append(_delivery(row))
            return waiting

    async def chats_pending(self) -> list[int]:
        async with self._db.session() as s:
            rows = await s.scalars(
                select(WebhookDelivery.chat_id)
                .where(WebhookDelivery.handled_at.is_(None))
                .distinct()
            )
            return sorted(rows)

    async def claim(self, delivery: Delivery, turn_id: str) -> bool:
        """Bind the delivery to a new turn, unless another worker bound it first."""
        where = (
            WebhookDelivery.turn_id.is_(None)
            if delivery.turn_id is None
            else WebhookDelivery.turn_id == delivery.turn_id
        )
        async with self._db.session() as s, s.begin():
            claimed = await s.scalar(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery.id, where)
                .values(turn_id=turn_id, attempts=WebhookDelivery.attempts + 1)
                .returning(WebhookDelivery.id)
            )
        return claimed is not None

    async def give_up(self, delivery: Delivery, note: str) -> bool:
        """Mark the delivery handled without a summary, and store `note` for its chat, in one
        transaction: once, whichever worker gets here first."""
        async with self._db.session() as s, s.begin():
            given_up = await s.scalar(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery.id, WebhookDelivery.handled_at.is_(None))
                .values(handled_at=utcnow())
                .returning(WebhookDelivery.id)
            )
            if given_up is not None:
                s.add(OutboxMessage(chat_id=delivery.chat_id, text=note))
        return given_up is not None

    async def uncount(self, delivery_id: int) -> None:
        """Take back the attempt an orderly stop cancelled (never below zero)."""
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id, WebhookDelivery.attempts > 0)
                .values(attempts=WebhookDelivery.attempts - 1)
            )

    async def get(self, delivery_id: int) -> Delivery | None:
        async with self._db.session() as s:
            row = await s.get(WebhookDelivery, delivery_id)
            return _delivery(row) if row is not None else None

    async def count(self) -> int:
        async with self._db.session() as s:
            return await s.scalar(select(func.count()).select_from(WebhookDelivery)) or 0
