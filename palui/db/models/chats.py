"""A chat's conversation: chats, sessions, messages, turns and their model calls."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class Chat(Base):
    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16), default="private")
    current_session_id: Mapped[int | None] = mapped_column(Integer)
    # The model a person chose with /model (None: the default, PALUI_MODEL).
    model: Mapped[str | None] = mapped_column(String(200))
    # /voice on|off: whether answers to voice notes are also spoken (with PALUI_TTS_MODEL).
    voice_replies: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ChatSession(Base):
    """A chat's short-term history: a summary plus the messages after it."""

    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("chats.id"), index=True)
    summary: Mapped[str] = mapped_column(Text, default="")
    summary_tainted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class MessageRow(Base):
    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    chat_id: Mapped[int] = mapped_column(BigInteger)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    # The inbox update a person's message came from: re-running an interrupted turn must not
    # add the same message to the history twice.
    update_id: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    tainted: Mapped[bool] = mapped_column(Boolean, default=False)
    # Who wrote a group message (`ChatUser.label`): it reaches the model as the message's name.
    author: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (Index("ix_messages_session_id_id", "session_id", "id"),)


class Turn(Base):
    __tablename__ = "turns"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, index=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("sessions.id"))
    kind: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(24), index=True)
    steps: Mapped[int] = mapped_column(Integer, default=0)
    budget_hit: Mapped[str | None] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    tainted: Mapped[bool] = mapped_column(Boolean, default=False)
    taint_source: Mapped[str | None] = mapped_column(String(160))  # "mcp-web" or "mcp-web:tool"
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The streamed preview this turn's answer is shown in (recorded as soon as it was sent): a
    # re-run of an interrupted turn takes it over instead of leaving it beside a new answer.
    preview_message_id: Mapped[int | None] = mapped_column(BigInteger)
    # Written just before the first preview is sent: the newest message id known in the chat
    # then, and the text that preview shows. A crash between the send and its record leaves a
    # message the re-run finds above the floor by editing candidates to this text.
    preview_floor: Mapped[int | None] = mapped_column(BigInteger)
    preview_text: Mapped[str | None] = mapped_column(Text)
    # Whose message started a chat turn (a group's `[groups] approver = "requester"` lets only
    # them decide its cards) and the message its answer is threaded to (groups).
    requester_id: Mapped[int | None] = mapped_column(BigInteger)
    reply_to: Mapped[int | None] = mapped_column(BigInteger)
    # Read from the chat's row by the turn's INSERT: the model it asks (None: the default), and
    # whether its answer is also spoken (it answers a voice note and the chat has /voice on).
    model: Mapped[str | None] = mapped_column(String(200))
    voice: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # The OpenTelemetry trace id of the turn's span (its log lines carry it); None: tracing off.
    trace_id: Mapped[str | None] = mapped_column(String(32))


class ModelCall(Base):
    """Token usage of one model call (the daily cap and /status add these up)."""

    __tablename__ = "model_calls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str | None] = mapped_column(String(32), index=True)
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    model: Mapped[str] = mapped_column(String(200))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class ModelStandIn(Base):
    """A day a fallback stood in for a primary model that refused the key, per chat: the chat
    is told once a day (this row is written with the notice), and /status shows the newest."""

    __tablename__ = "model_stand_ins"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # UTC, ISO
    primary_model: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class Topic(Base):
    """A topic of a chat with topics, as a conversation of its own: its key (`palui.db.topics`)
    stands in for a chat id in every table keyed by chat."""

    __tablename__ = "topics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    topic_id: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("chat_id", "topic_id"),)
