"""What a tap on a sheet's card (the connector sheet, the job sheet) comes to: the toast, and
the card as it should be redrawn."""

from __future__ import annotations

from dataclasses import dataclass

from palui.domain import Card


@dataclass(frozen=True, slots=True)
class SheetTap:
    notice: str
    chat_id: int
    message_id: int | None
    card: Card | None = None
