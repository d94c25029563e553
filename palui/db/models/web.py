"""The web console's access: one-time sign-in links and the sessions they open. Only hashes of
the tokens are stored, so a copy of the database signs nobody in."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class WebLink(Base):
    """A sign-in link sent by `/web`: used once (`used_at` set by a conditional update)."""

    __tablename__ = "web_links"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)
    display: Mapped[str] = mapped_column(String(160))  # "@ana": how decisions name the person
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WebSession(Base):
    """A signed-in browser: its cookie's hash, the person, and the CSRF token of its forms."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)
    display: Mapped[str] = mapped_column(String(160))
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
