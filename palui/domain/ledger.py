"""The action ledger's states (DESIGN §1.6 step 4): a world-changing call is claimed first.

(none) --claim--> in_progress --> completed | failed | unknown
failed --claim--> in_progress   (a failed action may run again)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class ActionState(StrEnum):
    NEW = "new"  # only in a Claim, never stored: the caller has the action and may go ahead
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    UNKNOWN = "unknown"  # interrupted mid-flight: it may or may not have happened


@dataclass(frozen=True, slots=True)
class Claim:
    """What claiming an action came to: go ahead (new), or the identical call's state."""

    state: ActionState
    action_id: int | None = None
    result: str | None = None
    at: datetime | None = None
