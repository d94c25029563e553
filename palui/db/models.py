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
    # Set when a person edited the arguments (migration 0009): `arguments` then holds the
    # person's values and this the model's, so the record shows both.
    model_arguments: Mapped[str | None] = mapped_column(Text)
    edited_by: Mapped[str | None] = mapped_column(String(128))
    edited_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


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


class ToolStep(Base):
    """One step of a tool call through the pipeline (DESIGN §1.6): hook, guard, policy,
    approval, destination guard, send cap, ledger, execution, post hook; with its reason."""

    __tablename__ = "tool_steps"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    step: Mapped[int] = mapped_column(Integer)
    call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(128))
    stage: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(24))
    reason: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[str | None] = mapped_column(Text)  # JSON: decision id, arguments, ...
    # An execution of a tool that sends out: the daily send cap counts these.
    sends_out: Mapped[bool] = mapped_column(Boolean, default=False)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class SendCapNotice(Base):
    """The chat was told today that the daily send cap is used up (told once a day)."""

    __tablename__ = "send_cap_notices"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)


# -- memory: compaction and recall (issue 6; migration 0006) ------------------------------------


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


# -- scheduled jobs (issue 7; migration 0007) ---------------------------------------------------


class JobRow(Base):
    """A scheduled job: the database is the source of truth; schedulers load and follow it."""

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(16), unique=True)  # in its /jobs card's buttons
    chat_id: Mapped[int] = mapped_column(BigInteger, index=True)
    prompt: Mapped[str] = mapped_column(Text)
    schedule: Mapped[str] = mapped_column(String(200))
    timezone: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    daily_token_cap: Mapped[int] = mapped_column(Integer)
    anchor_at: Mapped[datetime] = mapped_column(UTCDateTime)  # an interval counts from here
    created_by: Mapped[str] = mapped_column(String(160))
    cap_notice_day: Mapped[str | None] = mapped_column(String(10))  # told "over its cap" then
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class JobRun(Base):
    """One due time of a job, claimed (inserted) before the run starts: the unique
    (job_id, scheduled_for) pair is what makes a run fire once across processes and restarts."""

    __tablename__ = "job_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(Integer, index=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    scheduled_for: Mapped[datetime] = mapped_column(UTCDateTime)
    # queued (claimed) -> started | skipped (over its cap) ; missed (past the misfire grace)
    status: Mapped[str] = mapped_column(String(16), index=True)
    missed: Mapped[int] = mapped_column(Integer, default=0)  # due times coalesced into this one
    turn_id: Mapped[str | None] = mapped_column(String(32), index=True)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        UniqueConstraint("job_id", "scheduled_for", name="uq_job_runs_job_id_scheduled_for"),
    )


# -- inbound webhooks and chat leases (issue 7; migration 0008) ---------------------------------


class WebhookDelivery(Base):
    """An inbound webhook's payload, stored before the sender gets its 202 (untrusted data).

    `turn_id` is the turn summarising it; `handled_at` is set once that turn has ended."""

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

    __table_args__ = (Index("ix_webhook_deliveries_chat_id_handled_at", "chat_id", "handled_at"),)


class ChatLease(Base):
    """Which process runs a chat's turns now (several processes on one database, DESIGN §3)."""

    __tablename__ = "chat_leases"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(String(96))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


# -- edited approvals (issue 5, Edit; migration 0009) -------------------------------------------


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


# -- process ownership (migration 0010) -----------------------------------------------------
# Recovery after a process dies is scoped to the chats whose lease it held (palui.db.recovery);
# the per-webhook rate limit counts stored deliveries, so it needs them by webhook and time.

Index(
    "ix_webhook_deliveries_webhook_received_at",
    WebhookDelivery.webhook,
    WebhookDelivery.received_at,
)


class DeliveryLease(Base):
    """Which process sends a chat's outbox now: one at a time, so no reply part goes out twice."""

    __tablename__ = "delivery_leases"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(String(96))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


# -- /stop across processes (migration 0011) ----------------------------------------------------


class StopRequest(Base):
    """A /stop that reached a process not running the chat's turn; the process running it polls
    for its turn's row (palui.turns.stop). Keyed by turn, so it never stops a later turn."""

    __tablename__ = "stop_requests"

    turn_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
