"""The terminal as a channel, for `palui chat`: replies are printed, nothing is split."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO


class ConsoleChannel:
    """Implements the `Channel` port on a text stream."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def streaming_reply(self, chat_id: int) -> None:
        return None  # a terminal shows the whole answer at once

    def render(self, text: str) -> Sequence[str]:
        return [text]

    async def send_part(self, chat_id: int, part: Any) -> None:
        self._out.write(f"\npalui> {part}\n\n")
        self._out.flush()

    async def send_notice(self, chat_id: int, text: str) -> None:
        await self.send_part(chat_id, text)

    async def typing(self, chat_id: int) -> None:
        return None

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        return None
