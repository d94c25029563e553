"""Messages in and out: the Telegram inbox, the outbox of replies, stranger notices."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class InboxUpdate(Base):
    """A Telegram update, stored before its offset is confirmed."""

    __tablename__ = "inbox"

    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    user_id: Mapped[int | None] = mapped_column(BigInteger)
    payload: Mapped[str] = mapped_column(Text)  # the update's JSON
    status: Mapped[str] = mapped_column(String(16), default="pending")
    turn_id: Mapped[str | None] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    handled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Turns started on it (counted before each, so a kill -9 counts): `palui.chat.attempts`.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (Index("ix_inbox_status_update_id", "status", "update_id"),)


class OutboxMessage(Base):
    """A reply committed with its turn, delivered afterwards (so a crash can't lose it)."""

    __tablename__ = "outbox"
    # A unique index, not a constraint: SQLite adds (and drops) an index without rebuilding the
    # table, which other tables' rows refer to.
    __table_args__ = (Index("uq_outbox_about_update", "about_update", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    text: Mapped[str] = mapped_column(Text)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    parts_sent: Mapped[int] = mapped_column(Integer, default=0)
    # The preview message the first part replaces (an edit, so delivering it again is harmless).
    edit_message_id: Mapped[int | None] = mapped_column(BigInteger)
    # The message the first part answers (sent as a reply to it: a group's threading).
    reply_to: Mapped[int | None] = mapped_column(BigInteger)
    # The message the newest sent part became (migration 0022): where a search for a part
    # sent but not recorded starts (`palui.db.outbox_search`).
    last_message_id: Mapped[int | None] = mapped_column(BigInteger)
    # The process (lease holder) that stored it: a pending row another one stored may have been
    # in flight there when it died (migration 0022).
    sender: Mapped[str | None] = mapped_column(String(128))
    # Also spoken after its text (a voice message, `palui.chat.outbox`).
    voice: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # The inbox update a reply is about, stored once whatever re-runs (the 🎙 line of a voice
    # note: a re-run after a crash stores no second one).
    about_update: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class StrangerNotice(Base):
    """The audit line for a stranger: one polite refusal per user per day."""

    __tablename__ = "stranger_notices"

    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
