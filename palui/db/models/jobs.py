"""Scheduled jobs and their runs."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


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
    # Created in a tainted turn: its source ("mcp-web:mcp-web__fetch"); every run starts tainted.
    taint_source: Mapped[str | None] = mapped_column(String(160))
    # The model its chat had chosen (/model) when it was created; None: the default.
    model: Mapped[str | None] = mapped_column(String(200))
    # Who asked for it (the person whose message started the turn that made it): a server's
    # question during one of its runs goes to them. None: nobody is known (its run's are declined).
    owner_id: Mapped[int | None] = mapped_column(BigInteger)
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
