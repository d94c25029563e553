"""The inbox while the rest of Palui starts: Telegram is polled from the first seconds of a
start, before the chat engine, the connectors and the model are loaded, and nothing it brings
is lost or answered twice.

- An owner's private message, command or tap is stored in the inbox at once (the same row the
  full inbox stores), so Telegram may be told it arrived; the chats take it up when they start,
  as they take up whatever a previous process left (`Chats.start`).
- Anything else (a group's message, a stranger's) needs the full inbox's rules (is it addressed
  to Palui, the stranger's refusal): it waits for the full inbox, unacknowledged. That holds the
  poll for the few seconds of a start, and loses nothing.
- `open` starts the chats and hands over in one step under the lock `accept` stores under: an
  event is either stored before the chats look for what waits, or goes to the full inbox after.

Implements the `InboundSink` port the channels take.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from palui.chat.groups import in_group
from palui.chat.stored_inbound import inbound_to_json
from palui.db import Store
from palui.domain import Inbound
from palui.logs import get_logger
from palui.ports import InboundSink

log = get_logger("palui.chat.inbox")


class EarlyInbox:
    def __init__(self, store: Store, allowed_users: frozenset[int]) -> None:
        self._store = store
        self._allowed = allowed_users
        self._inbox: InboundSink | None = None  # the full inbox, once the chats started
        self._opened = asyncio.Event()
        self._lock = asyncio.Lock()

    def is_allowed(self, user_id: int) -> bool:
        return user_id in self._allowed

    async def accept(self, inbound: Inbound) -> bool:
        """Store an owner's private event now; hand anything else to the full inbox once it is
        there. Returns once it is safe to acknowledge the event."""
        if self._inbox is None and not in_group(inbound) and self.is_allowed(inbound.user.id):
            async with self._lock:
                if self._inbox is None:
                    return await self._store_now(inbound)
        await self._opened.wait()
        assert self._inbox is not None
        return await self._inbox.accept(inbound)

    async def _store_now(self, inbound: Inbound) -> bool:
        payload = inbound_to_json(inbound)
        stored = await self._store.inbox.add_seeing(
            inbound.update_id, inbound.chat_id, inbound.user.id, payload
        )
        log.info("update_held", update_id=inbound.update_id, chat_id=inbound.chat_id)
        return stored is not None

    async def open(self, inbox: InboundSink, start: Callable[[], Awaitable[None]]) -> None:
        """Start the chats (`start`: they take up what was stored here) and send what comes
        next to `inbox`, with nothing stored in between."""
        async with self._lock:
            await start()
            self._inbox = inbox
        self._opened.set()
