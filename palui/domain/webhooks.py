"""An inbound webhook delivery as stored before its 202 (its turn summarises it once)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Delivery:
    id: int
    webhook: str
    chat_id: int
    instructions: str
    content_type: str
    body: str
    turn_id: str | None  # the turn that claimed it, if any
    received_at: datetime
    attempts: int = 0  # turns that claimed it so far (`palui.chat.attempts`)
