"""A chat's work as it is stored: inbound updates, turns, replies waiting to go out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class TurnStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    AWAITING_APPROVAL = "awaiting_approval"  # paused on approval cards; resumes after the taps


class InboxStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class InboxItem:
    """An update as the inbox stored it, waiting for (or bound to) its turn."""

    update_id: int
    chat_id: int | None
    user_id: int | None
    payload: dict[str, Any]
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """A reply not yet wholly in the chat: `parts_sent` of its parts already are."""

    id: int
    chat_id: int
    text: str
    parts_sent: int
