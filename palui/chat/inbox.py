"""Inbox intake: what a channel receives is stored before it is acknowledged, then dispatched.

- in a group, only what is addressed to Palui is taken (palui.chat.groups): a bare command
  there only when it just shows something (`shown_bare`, from the commands' table);
- a stranger's event is not stored; its polite refusal (one a day) goes out in the background,
  under a global budget (palui.chat.strangers), so strangers never hold up the intake; in a
  group a stranger's message gets no refusal (a tap still gets its toast, seen by them alone);
- an event already stored (Telegram re-delivers after a crash) is not dispatched again;
- commands and taps go to the interactions (palui.interact) at once, never to the model;
  anything else wakes the chat's worker, which answers what waits in the inbox together; a
  message that arrives while a turn runs gets the 👀 reaction (it waits for the next turn).

Implements the `InboundSink` port the channels take.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from palui.chat.background import Background
from palui.chat.groups import QUEUED, addressed, in_group
from palui.chat.stored_inbound import inbound_from_json, inbound_to_json
from palui.chat.strangers import StrangerRefusals
from palui.chat.workers import ChatWorkers
from palui.db import Store
from palui.delivery.outbox import Outbox
from palui.domain import Inbound, InboxItem
from palui.logs import bound, get_logger
from palui.ports import Interactions, Notifying, Reactions
from palui.turns.foreign import said

log = get_logger("palui.chat.inbox")


class Intake(Notifying, Reactions, Protocol):
    """What the inbox answers through: a stranger's refusal, the 👀 on a queued message."""


class Inbox:
    def __init__(
        self,
        store: Store,
        channel: Intake,
        workers: ChatWorkers,
        outbox: Outbox,
        interactions: Interactions,
        background: Background,
        *,
        allowed_users: frozenset[int],
        now: Callable[[], datetime],
        shown_bare: frozenset[str],
        refusals: StrangerRefusals | None = None,
    ) -> None:
        self._store = store
        self._channel = channel
        self._workers = workers
        self._outbox = outbox
        self._interactions = interactions
        self._background = background
        self._allowed = allowed_users
        self._now = now
        self._shown_bare = shown_bare  # commands a group may send bare (palui.chat.groups)
        self.refusals = refusals or StrangerRefusals(store, channel, background, now=now)

    def is_allowed(self, user_id: int) -> bool:
        return user_id in self._allowed

    async def accept(self, inbound: Inbound) -> bool:
        """Take one event from the channel. Returns once it is safe to acknowledge it."""
        if not addressed(inbound, self._shown_bare):
            return False  # a group's own conversation: not Palui's to keep (palui.chat.groups)
        if not self.is_allowed(inbound.user.id):
            if in_group(inbound) and not inbound.callback_query_id:
                # No refusal in a group: it would talk to everyone there about one stranger.
                log.info("stranger_ignored", user_id=inbound.user.id, chat_id=inbound.chat_id)
                return False
            log.warning("stranger_refused", user_id=inbound.user.id, chat_id=inbound.chat_id)
            self.refusals.offer(inbound)
            return False
        seen = await self._store.inbox.add_seeing(
            inbound.update_id, inbound.chat_id, inbound.user.id, inbound_to_json(inbound)
        )
        if seen is None:
            log.info("update_redelivered", update_id=inbound.update_id, chat_id=inbound.chat_id)
            return False
        # As it came (stored as JSON once), with what its INSERT saw.
        await self.dispatch(inbound, running_elsewhere=seen.running, asked=seen.asked)
        return True

    async def dispatch_stored(self, item: InboxItem) -> None:
        """Send on an event stored before (one found pending at start)."""
        await self.dispatch(inbound_from_json(item.payload))

    async def dispatch(
        self, inbound: Inbound, *, running_elsewhere: bool = False, asked: bool | None = None
    ) -> None:
        """Send a stored event on: to the interactions, or to the chat worker.
        `running_elsewhere`: a turn of the chat was running when it was stored (read with its
        INSERT), maybe in another process: it waits, and gets its 👀 from here. `asked`:
        whether a server's question waits for this message (None: the interactions look)."""
        if await self._interactions.owns(inbound, asked=asked):
            self._background.spawn(self._interact(inbound), handler=True)
        else:
            if (
                inbound.message_id is not None
                and said(inbound)
                and (running_elsewhere or self._workers.busy(inbound.chat_id))
            ):
                # It waits behind the running turn: 👀 says it was seen and comes next.
                react = self._channel.react(inbound.chat_id, inbound.message_id, QUEUED)
                self._background.spawn(react)
            self._workers.kick(inbound.chat_id)

    async def _interact(self, inbound: Inbound) -> None:
        with bound(chat_id=inbound.chat_id, update_id=inbound.update_id):
            if await self._interactions.handle(inbound):
                self._workers.kick(inbound.chat_id)  # a decided card: its turn goes on
            await self._outbox.deliver(inbound.chat_id)  # the answer, if it left one
