"""A memory channel a test can await a message, a card or a toast on (each wait bounded)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from palui.domain import Card
from tests.fakes.memory_channel import MemoryChannel

BOUND_S = 20


@dataclass
class WatchedChannel(MemoryChannel):
    """A memory channel a test can await a message on."""

    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    deleted: list[int] = field(default_factory=list)

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> None:
        await super().send_part(chat_id, part, reply_to=reply_to)
        self._arrived.set()

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        message_id = await super().send_card(chat_id, card)
        self._arrived.set()
        return message_id

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        await super().answer_callback(callback_query_id, text)
        self._arrived.set()

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        self.deleted.append(message_id)

    async def wait_for_toast(self, callback_query_id: str) -> str:
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [toast for cb, toast in self.answers if cb == callback_query_id]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_for_card(self, wanted: Callable[[Card], bool]) -> Card:
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [c for c in self.cards if wanted(c)]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_for(self, wanted: Callable[[str], bool], *, chat_id: int | None = None) -> str:
        """The last text `wanted` sent to `chat_id` (the channel's own chat by default)."""
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [t for t in self.texts(chat_id) if wanted(t)]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()
