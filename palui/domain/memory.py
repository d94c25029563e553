"""Memory's records (DESIGN §1.7): the recall card's switches as stored, auto-recall's checks,
and the slices of a session that compaction summarises and auto-save stores in recall."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class CheckOutcome(StrEnum):
    USED = "used"  # recall answered with something; it went into the turn's context
    EMPTY = "empty"  # recall answered: nothing known yet
    SKIPPED = "skipped"  # a command, or a message under 4 words
    TIMED_OUT = "timed_out"  # no answer within the limit; the turn went on without it
    FAILED = "failed"  # not connected, or an error


class SliceReason(StrEnum):
    COMPACTION = "compaction"  # the session grew long: the slice is summarised (and saved)
    NEW = "new"  # /new closed the session: the slice is only saved


class SaveState(StrEnum):
    PENDING = "pending"  # to be stored in recall (again, after a failure)
    SAVED = "saved"
    FAILED = "failed"  # tried and failed: tried again later
    OFF = "off"  # auto-save was off when the slice was planned: never saved


@dataclass(frozen=True, slots=True)
class StoredSwitches:
    """What the person set on the recall card; None: not set (palui.toml's default applies)."""

    auto_recall: bool | None = None
    auto_save: bool | None = None
    memory_tools: bool | None = None


@dataclass(frozen=True, slots=True)
class SliceRecord:
    id: int
    chat_id: int
    session_id: int
    first_message_id: int
    last_message_id: int
    reason: SliceReason
    summarised: bool
    save_state: SaveState
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SliceMessage:
    id: int
    role: str
    content: str
    turn_id: str | None
    tainted: bool  # the message or its turn read untrusted content
    finished: bool  # its turn has ended (a paused turn may still read untrusted content)
