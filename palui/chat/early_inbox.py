"""The inbox while the rest of Palui starts: Telegram is polled from the first seconds of a
start, before the chat engine, the connectors and the model are loaded, and nothing it brings
is lost or answered twice.

- An owner's private message, command or tap is stored in the inbox at once (the same row the
  full inbox stores), so Telegram may be told it arrived; the chats take it up when they start,
  as they take up whatever a previous process left (`Chats.start`). A message stored while a
  turn of its chat runs (in another process) gets its 👀 as the full inbox gives it.
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

from palui.chat.groups import QUEUED, in_group
from palui.chat.stored_inbound import inbound_to_json
from palui.db import Store
from palui.domain import Inbound
from palui.logs import get_logger
from palui.ports import InboundSink, Reactions
from palui.turns.foreign import said

log = get_logger("palui.chat.inbox")


class EarlyInbox:
    def __init__(self, store: Store, reactions: Reactions, allowed_users: frozenset[int]) -> None:
        self._store = store
        self._reactions = reactions
        self._allowed = allowed_users
        self._reacting: set[asyncio.Task[None]] = set()  # held till done: the loop keeps weak refs
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
        seen = await self._store.inbox.add_seeing(
            inbound.update_id, inbound.chat_id, inbound.user.id, payload
        )
        log.info("update_held", update_id=inbound.update_id, chat_id=inbound.chat_id)
        # A turn of the chat runs (elsewhere): 👀, as the full inbox gives it. A typed answer to
        # a server's question is told apart when the chats take the row up (`dispatch_stored`).
        if seen is not None and seen.running and inbound.message_id is not None and said(inbound):
            task = asyncio.create_task(self._eyes(inbound.chat_id, inbound.message_id))
            self._reacting.add(task)
            task.add_done_callback(self._reacting.discard)
        return seen is not None

    async def _eyes(self, chat_id: int, message_id: int) -> None:
        try:
            await self._reactions.react(chat_id, message_id, QUEUED)
        except Exception as exc:  # best effort, as the reaction always is
            log.warning("reaction_failed", chat_id=chat_id, error=repr(exc))

    async def open(self, inbox: InboundSink, start: Callable[[], Awaitable[None]]) -> None:
        """Start the chats (`start`: they take up what was stored here) and send what comes
        next to `inbox`, with nothing stored in between."""
        async with self._lock:
            await start()
            self._inbox = inbox
        self._opened.set()
