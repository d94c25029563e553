"""Inbound webhook deliveries."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class WebhookDelivery(Base):
    """An inbound webhook's payload, stored before the sender gets its 202 (untrusted data).

    `turn_id` is the turn summarising it; `handled_at` is set once that turn has ended.
    `replay_key` is a signed delivery's signature: unique per webhook, so a replay is refused by
    the database whichever process it reaches (NULL for a delivery sent with the plain secret)."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    webhook: Mapped[str] = mapped_column(String(64))
    chat_id: Mapped[int] = mapped_column(BigInteger)
    instructions: Mapped[str] = mapped_column(Text, default="")
    content_type: Mapped[str] = mapped_column(String(200), default="")
    body: Mapped[str] = mapped_column(Text)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    handled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    replay_key: Mapped[str | None] = mapped_column(String(80))
    # Turns that claimed it (counted with the claim, so a kill -9 counts): `palui.chat.attempts`.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        Index("ix_webhook_deliveries_chat_id_handled_at", "chat_id", "handled_at"),
        # The per-webhook rate limit counts stored deliveries by webhook and time.
        Index("ix_webhook_deliveries_webhook_received_at", "webhook", "received_at"),
        Index("ix_webhook_deliveries_webhook_replay_key", "webhook", "replay_key", unique=True),
    )
