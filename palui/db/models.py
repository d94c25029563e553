"""Tables. Times are stored in UTC; every row a turn needs to resume lives here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every backend (SQLite would hand back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Chat(Base):
    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16), default="private")
    current_session_id: Mapped[int | None] = mapped_column(Integer)
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

    __table_args__ = (Index("ix_inbox_status_update_id", "status", "update_id"),)


class OutboxMessage(Base):
    """A reply committed with its turn, delivered afterwards (so a crash can't lose it)."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    text: Mapped[str] = mapped_column(Text)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    parts_sent: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class StrangerNotice(Base):
    """The audit line for a stranger: one polite refusal per user per day."""

    __tablename__ = "stranger_notices"

    user_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    attempts: Mapped[int] = mapped_column(Integer, default=1)


class ToolCallRow(Base):
    """One tool call of a turn; written before the call goes out (status `running`)."""

    __tablename__ = "tool_calls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    step: Mapped[int] = mapped_column(Integer)
    tool: Mapped[str] = mapped_column(String(128))
    arguments: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), index=True)
    result: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


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
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    result: Mapped[str | None] = mapped_column(Text)


class ToolSetting(Base):
    """A tool's switch and class as the person set them (the connector sheet)."""

    __tablename__ = "tool_settings"

    tool: Mapped[str] = mapped_column(String(128), primary_key=True)  # full name
    enabled: Mapped[bool] = mapped_column(Boolean)
    tool_class: Mapped[str | None] = mapped_column(String(16))  # set by a person: source "you"
    definition_hash: Mapped[str | None] = mapped_column(String(64))
    # Its definition changed after it was classified: destructive and off until looked at.
    needs_review: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ConnectorSetting(Base):
    __tablename__ = "connector_settings"

    connector_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    paused: Mapped[bool] = mapped_column(Boolean, default=False)
    trust: Mapped[str | None] = mapped_column(String(16))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Decision(Base):
    """Every policy decision on a tool call: what was decided, why, and under which rules."""

    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    step: Mapped[int] = mapped_column(Integer)
    tool: Mapped[str] = mapped_column(String(128))
    tool_class: Mapped[str] = mapped_column(String(16))
    decision: Mapped[str] = mapped_column(String(16))
    decision_id: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ActionRow(Base):
    """The action ledger: a world-changing call, keyed by chat + tool + canonical arguments.

    Stored (committed) before the call goes out, so a crash leaves an `in_progress` row that
    a restart turns into `unknown`, never into a second call.
    """

    __tablename__ = "actions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64))
    slot: Mapped[int] = mapped_column(BigInteger)  # the window it was claimed in
    chat_id: Mapped[int] = mapped_column(BigInteger)
    tool: Mapped[str] = mapped_column(String(128))
    arguments: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), index=True)
    result: Mapped[str | None] = mapped_column(Text)
    turn_id: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("key", "slot", name="uq_actions_key_slot"),)


# -- the tool pipeline's record (issue 5; migration 0005) ---------------------------------------


# -- memory: compaction and recall (issue 6; migration 0006) ------------------------------------


# -- scheduled jobs (issue 7; migration 0007) ---------------------------------------------------


# -- inbound webhooks and chat leases (issue 7; migration 0008) ---------------------------------


# -- edited approvals (issue 5, Edit; migration 0009) -------------------------------------------
