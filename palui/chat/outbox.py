"""Outbox delivery: the ONE sender of a chat's replies.

A reply is in the outbox before anything is sent (committed with its turn); `deliver` sends the
chat's undelivered replies in order, recording each part as it goes out, so a crash re-sends at
most the part in flight and never loses one. Two things keep a part from going out twice: within
the process the chat's delivery lock (a streamed answer's last edit takes it too, see
`palui.turns.ending`), across processes the chat's delivery lease.
"""

from __future__ import annotations

import asyncio

from palui.chat.background import Background
from palui.chat.leases import ChatLeases
from palui.db import Store
from palui.domain import EVERY_CHAT, ChatScope
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Channel

log = get_logger("palui.chat.outbox")


class Outbox:
    def __init__(
        self,
        store: Store,
        channel: Channel,
        senders: ChatLeases,
        background: Background,
        *,
        scope: ChatScope = EVERY_CHAT,
    ) -> None:
        self._store = store
        self._scope = scope  # a chat outside it is another process's to send
        self._channel = channel
        self._senders = senders  # who sends a chat's outbox: one process at a time
        self._background = background
        self._locks: dict[int, asyncio.Lock] = {}

    def lock(self, chat_id: int) -> asyncio.Lock:
        """Held while the chat's reply parts go out."""
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = self._locks[chat_id] = asyncio.Lock()
        return lock

    def busy(self, chat_id: int) -> bool:
        return self.lock(chat_id).locked()

    async def add(self, chat_id: int, text: str) -> None:
        """Store a reply and send it (with whatever waits before it)."""
        await self._store.outbox.add(chat_id, text)
        await self.deliver(chat_id)

    def deliver_soon(self, chat_id: int) -> None:
        """Something new is in the chat's outbox (e.g. from palui__send_message)."""
        if not self._background.closed:
            self._background.spawn(self.deliver(chat_id))

    async def deliver(self, chat_id: int) -> None:
        """Send the chat's undelivered replies in order, recording each part as it goes out."""
        if not self._scope.serves(chat_id):
            return  # its replies stay pending for the process that serves the chat
        async with self.lock(chat_id), self._senders.hold(chat_id) as sending:
            if not sending:
                return  # another process sends this chat's outbox, reading it until it is empty
            while items := await self._store.outbox.pending(chat_id):
                for item in items:
                    parts = self._channel.render(item.text)
                    try:
                        for index in range(item.parts_sent, len(parts)):
                            await self._channel.send_part(chat_id, parts[index])
                            done = index + 1 == len(parts)
                            await self._store.outbox.part_sent(item.id, index + 1, done=done)
                    except ChannelError as exc:
                        if getattr(exc, "permanent", False):
                            log.error("reply_dropped", chat_id=chat_id, error=str(exc))
                            await self._store.outbox.part_sent(item.id, len(parts), done=True)
                            continue
                        log.warning("reply_delayed", chat_id=chat_id, error=str(exc))
                        return  # the sweeper tries again; order is kept by stopping here
