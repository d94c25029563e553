"""Cards: a message with buttons (an approval, a settings sheet), and answers to their taps."""

from __future__ import annotations

from typing import Protocol

from palui.domain import Card


class Cards(Protocol):
    async def send_card(self, chat_id: int, card: Card) -> int:
        """Send a card; returns its message id."""
        ...

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        """Replace a card's text and buttons (no buttons: they are removed)."""
        ...

    async def answer_callback(self, callback_query_id: str, text: str) -> None: ...
