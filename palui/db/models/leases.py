"""Who works on a chat now (several processes on one database, DESIGN §3); /stop elsewhere."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class ChatLease(Base):
    """Which process runs a chat's turns now (several processes on one database, DESIGN §3)."""

    __tablename__ = "chat_leases"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(String(96))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # One more with each take (a renewal keeps it): the fence of the turns run under it.
    generation: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class DeliveryLease(Base):
    """Which process sends a chat's outbox now: one at a time, so no reply part goes out twice."""

    __tablename__ = "delivery_leases"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(String(96))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    generation: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ProcessHeartbeat(Base):
    """A running process's pulse, renewed every second or so: a holder whose beats stopped is
    taken over in seconds, not when its leases lapse (palui.chat.heartbeat). A holder with no
    row (an older process, a test's stand-in) is judged by its leases' lapse alone."""

    __tablename__ = "process_heartbeats"

    holder: Mapped[str] = mapped_column(String(96), primary_key=True)
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class StopRequest(Base):
    """A /stop that reached a process not running the chat's turn; the process running it polls
    for its turn's row (palui.turns.stop). Keyed by turn, so it never stops a later turn."""

    __tablename__ = "stop_requests"

    turn_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
