"""The record of every tool call: one row per call, with its stage-by-stage story."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class CallRecordRow(Base):
    """One tool call of a turn (DESIGN §1.6), written only by `palui.tools.record`.

    Its `status` is written `running` before the call goes out, so a crash leaves a row that
    recovery turns into `unknown`. `stages` is a JSON list of {stage, outcome, reason, detail,
    at, duration_ms}: hooks, guards, policy, approval, destination guard, send cap, ledger,
    execution and post hooks, in the order they happened."""

    __tablename__ = "call_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    chat_id: Mapped[int] = mapped_column(BigInteger, default=0)
    step: Mapped[int] = mapped_column(Integer)
    call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(128))
    tool_class: Mapped[str | None] = mapped_column(String(16))
    # Where the class came from when the policy decided (`palui.policy.classes.ClassSource`).
    class_source: Mapped[str | None] = mapped_column(String(16))
    sends_out: Mapped[bool] = mapped_column(Boolean, default=False)
    arguments: Mapped[str] = mapped_column(Text, default="")
    # Set when a person edited the call on its card: `arguments` holds what ran.
    model_arguments: Mapped[str | None] = mapped_column(Text)
    decision: Mapped[str | None] = mapped_column(String(16))
    decision_id: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)  # why the policy decided so
    status: Mapped[str] = mapped_column(String(16), index=True)
    result: Mapped[str | None] = mapped_column(Text)  # cut to the turn's result limit
    stages: Mapped[str] = mapped_column(Text, default="[]")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When the call went out (NULL if it never did): the daily send cap counts these.
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    duration_ms: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (Index("ix_call_records_sends_out_started_at", "sends_out", "started_at"),)


class TurnOfferRow(Base):
    """A tool a turn was offered and why (ranked, a named connector, found by search…), written
    with the turn's end or pause; a search mid-turn adds rows. Read by the web console's turn
    page, so a tool left out of a big catalog is never left out silently."""

    __tablename__ = "turn_offers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[str] = mapped_column(String(32), index=True)
    tool: Mapped[str] = mapped_column(String(128))
    why: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text, default="")
    enabled: Mapped[int] = mapped_column(Integer, default=0)  # tools the turn could be offered
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
