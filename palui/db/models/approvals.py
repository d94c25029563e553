"""Approvals: paused turns, approval cards and their edits in the chat."""

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


class PausedTurn(Base):
    """A turn waiting for approval taps: everything `resume_turn` needs, as JSON."""

    __tablename__ = "paused_turns"

    turn_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, index=True)
    state: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set by the process that resumes it, so a turn resumes once even with several processes.
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ApprovalRow(Base):
    """One approval card: bound to a tool, its canonical arguments and its definition hash."""

    __tablename__ = "approvals"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token: Mapped[str] = mapped_column(String(32), unique=True)  # in the card's callback data
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(128))
    arguments: Mapped[str] = mapped_column(Text)  # canonical JSON
    digest: Mapped[str] = mapped_column(String(64))  # tool + arguments + definition hash
    tool_class: Mapped[str] = mapped_column(String(16))
    sends_out: Mapped[bool] = mapped_column(Boolean, default=False)
    why: Mapped[str] = mapped_column(Text)
    decision_id: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), index=True)
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decided_on: Mapped[str | None] = mapped_column(String(8))  # "web" (the console), else a tap
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    result: Mapped[str | None] = mapped_column(Text)
    # Set when a person edited the arguments (migration 0009): `arguments` then holds the
    # person's values and this the model's, so the record shows both.
    model_arguments: Mapped[str | None] = mapped_column(Text)
    edited_by: Mapped[str | None] = mapped_column(String(128))
    edited_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ApprovalEdit(Base):
    """A person editing a card's arguments in the chat, one question per argument.

    Kept in the database so an edit survives a restart; the answer that moves it on is marked
    handled in the same transaction, so a redelivered message is never applied twice.
    """

    __tablename__ = "approval_edits"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token: Mapped[str] = mapped_column(String(32), unique=True)  # in the question's buttons
    approval_id: Mapped[str] = mapped_column(String(32), index=True)
    # The token of the card being edited: stale once the edit is confirmed.
    card_token: Mapped[str] = mapped_column(String(32), index=True)
    card_message_id: Mapped[int | None] = mapped_column(BigInteger)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    user_id: Mapped[int] = mapped_column(BigInteger)
    user_name: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), index=True)  # asking done cancelled ended
    fields: Mapped[str] = mapped_column(Text)  # JSON list: the argument names asked, in order
    position: Mapped[int] = mapped_column(Integer, default=0)
    arguments: Mapped[str] = mapped_column(Text)  # JSON: the values so far
    seq: Mapped[int] = mapped_column(Integer, default=0)  # +1 at every move: stale acts fail
    # The latest question sent, and the `seq` it asked at (behind `seq`: not sent yet).
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    asked_seq: Mapped[int | None] = mapped_column(Integer)
    # The Edit tap's update: messages sent before it are not answers (they wait for a turn).
    started_update_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_approval_edits_chat_id_user_id", "chat_id", "user_id"),)
