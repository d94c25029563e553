"""Approval cards and their edits, as the application sees them (DESIGN §1.6).

    pending --tap--> approved --claimed to run--> executing --> executed
            --tap--> denied
            --time-> expired

An edit of a card asks its questions one by one:

    asking --last answer--> done       (the approval now holds the person's values, new token)
           --Cancel, /stop--> cancelled
           --nothing changed--> unchanged
           --card decided meanwhile--> ended
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class ApprovalStatus(StrEnum):
    PENDING = "pending"  # the card waits for a tap
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    EXECUTING = "executing"  # claimed to run: never runs again, even after a crash
    EXECUTED = "executed"


class EditStatus(StrEnum):
    ASKING = "asking"  # the only open state: every move is conditional on it
    DONE = "done"
    CANCELLED = "cancelled"
    UNCHANGED = "unchanged"
    ENDED = "ended"


class EditConfirmation(StrEnum):
    """What binding an edit's last answer to its card came to."""

    DONE = "done"  # the approval holds the person's values under a new token
    STALE = "stale"  # the edit moved meanwhile: nothing changed
    ENDED = "ended"  # the card was decided, expired or replaced meanwhile: the edit ended


@dataclass(frozen=True, slots=True)
class NewApproval:
    id: str
    token: str
    call_id: str
    tool: str
    arguments: str
    digest: str
    tool_class: str
    sends_out: bool
    why: str
    decision_id: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    id: str
    token: str
    turn_id: str
    chat_id: int
    call_id: str
    tool: str
    arguments: str
    digest: str
    tool_class: str
    sends_out: bool
    why: str
    status: ApprovalStatus
    message_id: int | None
    decided_by: str | None
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None
    result: str | None
    model_arguments: str | None = None  # the model's values, when a person edited them
    edited_by: str | None = None
    edited_at: datetime | None = None
    decided_on: str | None = None  # "web": decided in the web console, else by a tap


@dataclass(frozen=True, slots=True)
class NewEdit:
    id: str
    token: str
    approval_id: str
    card_token: str
    card_message_id: int | None
    chat_id: int
    user_id: int
    user_name: str
    fields: tuple[str, ...]
    arguments: str  # JSON object: the card's values, changed as answers come in
    started_update_id: int | None = None


@dataclass(frozen=True, slots=True)
class EditRecord:
    id: str
    token: str
    approval_id: str
    card_token: str
    card_message_id: int | None
    chat_id: int
    user_id: int
    user_name: str
    status: EditStatus
    fields: tuple[str, ...]
    position: int
    arguments: str
    seq: int
    message_id: int | None
    asked_seq: int | None
    started_update_id: int | None
