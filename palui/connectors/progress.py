"""A long call's progress in the chat: "⏳ mcp-build__deploy: 40 %", one message edited at most
once a second (paced like a preview: Telegram counts edits) and deleted when the call ends."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from palui.domain import Card
from palui.errors import ChannelError
from palui.ports import Notes

EDIT_EVERY_S = 1.0


class ProgressNote:
    def __init__(
        self,
        channel: Notes,
        chat_id: int,
        label: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._channel = channel
        self._chat_id = chat_id
        self._label = label
        self._clock = clock
        self._message_id: int | None = None
        self._shown = ""
        self._at = 0.0
        self._closed = False

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback for one call."""
        if self._closed:
            return
        share = min(100, max(0, round(100 * progress / total))) if total else None
        said = f"{share} %" if share is not None else f"{progress:g}"
        text = f"⏳ {self._label}: {said}"  # the server's own message is not shown: its words
        now = self._clock()
        if text == self._shown or (self._message_id is not None and now - self._at < EDIT_EVERY_S):
            return
        self._shown, self._at = text, now
        with contextlib.suppress(ChannelError):
            if self._message_id is None:
                self._message_id = await self._channel.send_card(self._chat_id, Card(text))
                if self._closed:  # the call ended while it was being sent
                    await self._channel.delete_message(self._chat_id, self._message_id)
            else:
                await self._channel.edit_card(self._chat_id, self._message_id, Card(text))

    async def close(self) -> None:
        self._closed = True
        if self._message_id is not None:
            with contextlib.suppress(ChannelError):
                await self._channel.delete_message(self._chat_id, self._message_id)
