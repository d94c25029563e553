"""Memory: the recall switches, auto-recall checks, and the slices summarised or saved."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class MemorySwitches(Base):
    """The recall card's switches as the person set them (NULL: palui.toml's [recall] default)."""

    __tablename__ = "memory_switches"

    connector_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    auto_recall: Mapped[bool | None] = mapped_column(Boolean)
    auto_save: Mapped[bool | None] = mapped_column(Boolean)
    memory_tools: Mapped[bool | None] = mapped_column(Boolean)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RecallCheck(Base):
    """One auto-recall check before a turn (or a skipped command): the skip rate counts these."""

    __tablename__ = "recall_checks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    outcome: Mapped[str] = mapped_column(String(16))  # used, empty, skipped, timed_out, failed
    detail: Mapped[str | None] = mapped_column(Text)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class MemorySlice(Base):
    """A run of a session's messages, fixed before it is summarised or saved, so a retry after a
    crash handles the same messages (and builds the same source ids) again."""

    __tablename__ = "memory_slices"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, index=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    first_message_id: Mapped[int] = mapped_column(Integer)
    last_message_id: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(16))  # compaction | new
    summarised: Mapped[bool] = mapped_column(Boolean, default=False)
    save_state: Mapped[str] = mapped_column(String(16), index=True)  # pending saved failed off
    saved_count: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        UniqueConstraint("session_id", "first_message_id", name="uq_memory_slices_session_first"),
    )
