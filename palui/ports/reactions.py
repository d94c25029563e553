"""Reactions on a person's message."""

from __future__ import annotations

from typing import Protocol


class Reactions(Protocol):
    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        """Best effort: mark a person's message with an emoji reaction (👀: seen, queued)."""
        ...
