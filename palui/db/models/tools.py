"""Tools: switches and classes, paused connectors, the action ledger, send cap notices."""

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
    # The width the person chose (`palui.policy.matrix.Width`); NULL: palui.toml's `allow`.
    allow: Mapped[str | None] = mapped_column(String(8))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SettingsVersion(Base):
    """One row: bumped in the same transaction as every switch change (tool switches and
    classes, paused connectors, memory switches), so each process sees with one primary-key
    lookup whether its cached switches are stale."""

    __tablename__ = "settings_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger, default=0)


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


class SendCapNotice(Base):
    """The chat was told today that the daily send cap is used up (told once a day)."""

    __tablename__ = "send_cap_notices"

    chat_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)


class SkillTrust(Base):
    """A skill the operator trusted (`palui skills trust`, or Trust on `/skills`): by the
    digest of every file of its folder at that moment (`palui.skills.folder`). A folder whose
    digest differs is not trusted; `told` is set once the people were told it changed."""

    __tablename__ = "skill_trust"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))
    trusted_by: Mapped[str] = mapped_column(String(64))  # "cli", or "user:<telegram id>"
    trusted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    told: Mapped[bool] = mapped_column(Boolean, default=False)
