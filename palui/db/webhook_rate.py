"""The per-webhook rate limit, counted in the database so it holds across processes.

A delivery counts once it is stored; the count of the webhook's deliveries in the last minute
and the insert run in one transaction. On PostgreSQL a transaction-scoped advisory lock per
webhook name makes the count-then-insert atomic across processes; SQLite serves one process.
"""

from __future__ import annotations

import zlib
from datetime import timedelta

from sqlalchemy import func, select

from palui.db.models import WebhookDelivery, utcnow
from palui.db.repo import Repo

RATE_WINDOW = timedelta(seconds=60)
LOCK_SPACE = 0x5A1D  # keeps our advisory-lock keys apart from anyone else's on the database


class WebhookRateRepo(Repo):
    async def add_within_rate(
        self,
        webhook: str,
        chat_id: int,
        body: str,
        *,
        content_type: str,
        instructions: str,
        per_minute: int,
    ) -> int | None:
        """Store a delivery unless `per_minute` of the webhook's are already stored within the
        last 60 s (0 = no limit). Its id, or None when over the rate (nothing stored)."""
        async with self._db.session() as s, s.begin():
            if per_minute > 0:
                if not self._db.is_sqlite:
                    key = zlib.crc32(webhook.encode()) & 0x7FFFFFFF  # an int4
                    await s.execute(select(func.pg_advisory_xact_lock(LOCK_SPACE, key)))
                now = utcnow()
                recent = await s.scalar(
                    select(func.count()).where(
                        WebhookDelivery.webhook == webhook,
                        WebhookDelivery.received_at > now - RATE_WINDOW,
                    )
                )
                if int(recent or 0) >= per_minute:
                    return None
            row = WebhookDelivery(
                webhook=webhook, chat_id=chat_id, body=body, content_type=content_type,
                instructions=instructions, received_at=utcnow(),
            )  # fmt: skip
            s.add(row)
            await s.flush()
            return row.id
