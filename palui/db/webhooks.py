"""Inbound webhook deliveries: stored before the 202, summarised once, found again after a crash.

A delivery is claimed by writing the summarising turn's id on it (compare-and-set, so two workers
never both take it) and handled once that turn has ended. A delivery whose turn was left unfinished
by a process that died is taken again; one whose turn is done is only marked handled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update

from palui.db.models import Turn, WebhookDelivery, utcnow
from palui.db.repo import Repo
from palui.domain import TurnStatus


@dataclass(frozen=True, slots=True)
class Delivery:
    id: int
    webhook: str
    chat_id: int
    instructions: str
    content_type: str
    body: str
    turn_id: str | None
    received_at: datetime


def _delivery(row: WebhookDelivery) -> Delivery:
    return Delivery(
        row.id, row.webhook, row.chat_id, row.instructions, row.content_type, row.body,
        row.turn_id, row.received_at,
    )  # fmt: skip


class WebhookRepo(Repo):
    async def add(
        self, webhook: str, chat_id: int, body: str, *, content_type: str, instructions: str
    ) -> int:
        """Store a delivery; its id."""
        async with self._db.session() as s, s.begin():
            row = WebhookDelivery(
                webhook=webhook, chat_id=chat_id, body=body, content_type=content_type,
                instructions=instructions, received_at=utcnow(),
            )  # fmt: skip
            s.add(row)
            await s.flush()
            return row.id

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
                .values(turn_id=turn_id)
                .returning(WebhookDelivery.id)
            )
        return claimed is not None

    async def mark_handled(self, delivery_id: int) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id)
                .values(handled_at=utcnow())
            )

    async def get(self, delivery_id: int) -> Delivery | None:
        async with self._db.session() as s:
            row = await s.get(WebhookDelivery, delivery_id)
            return _delivery(row) if row is not None else None

    async def count(self) -> int:
        async with self._db.session() as s:
            return await s.scalar(select(func.count()).select_from(WebhookDelivery)) or 0
