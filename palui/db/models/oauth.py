"""A remote connector's OAuth grant: its tokens and client registration, sealed with a key that
is not in the database (palui/db/sealing.py), and the lease under which one process refreshes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palui.db.models.base import Base, UTCDateTime, utcnow


class OAuthGrant(Base):
    """One row per connector signed in (or being signed in) with OAuth."""

    __tablename__ = "oauth_grants"

    connector_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    tokens: Mapped[str | None] = mapped_column(Text)  # sealed JSON of the token response
    client: Mapped[str | None] = mapped_column(Text)  # sealed JSON of the client registration
    user_id: Mapped[int | None] = mapped_column(BigInteger)  # who signed in: told when it lapses
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    lapsed_told: Mapped[bool] = mapped_column(Boolean, default=False)
    refresh_holder: Mapped[str | None] = mapped_column(String(128))
    refresh_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ServerQuestion(Base):
    """A remote server's question during a tool call, asked in a chat (`palui.connectors.
    elicitation`). A question of the 2026 protocol's input-required round keeps the call and the
    server's opaque state, so an answer given after a restart continues the call."""

    __tablename__ = "server_questions"

    token: Mapped[str] = mapped_column(String(32), primary_key=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    user_id: Mapped[int] = mapped_column(BigInteger)  # the only person who may answer
    turn_id: Mapped[str | None] = mapped_column(String(32))
    connector_id: Mapped[str] = mapped_column(String(128))
    text: Mapped[str] = mapped_column(Text)  # the card's words
    call: Mapped[str | None] = mapped_column(Text)  # JSON: tool, arguments, key, request_state
    # JSON of the field a person answers with their next message (None: answered by a tap), so
    # whichever process receives that message recognises and reads it.
    typed_field: Mapped[str | None] = mapped_column(Text)
    message_id: Mapped[int | None] = mapped_column(BigInteger)  # the card, edited when /stopped
    # open answered taken continued closed cancelled
    status: Mapped[str] = mapped_column(String(16), index=True)
    answer: Mapped[str | None] = mapped_column(Text)  # JSON of the server's ElicitResult
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class OAuthSignIn(Base):
    """A sign-in under way (`/connect`): its `state` is kept only as a hash, so the row can be
    matched by the browser's return but not forged from a copy of the database. The answer
    (code, issuer, error) arrives in whichever process the browser or the pasted address
    reached, sealed, and is taken once by the process whose flow holds the PKCE verifier."""

    __tablename__ = "oauth_sign_ins"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    connector_id: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)  # who started it
    status: Mapped[str] = mapped_column(String(16))  # pending answered taken
    answer: Mapped[str | None] = mapped_column(Text)  # sealed JSON: code, iss, error
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
