"""The chat layer as one running thing: start where a previous process stopped, close, and the
owners told of something (palui.chat.wakeups has the wake-ups the rest of Palui calls).

Rules it keeps (DESIGN §1.1, §3):
- an event is stored in the inbox before `accept` returns, so the channel may then acknowledge it;
- a chat runs one turn at a time; messages that arrive meanwhile wait in the inbox and the next
  turn answers them together;
- a turn's reply is committed with the turn (history + outbox + inbox done) in one transaction,
  then delivered; a crash between the two re-delivers, it never loses the reply;
- `/stop` and the other commands are answered at once, never sent to the model.

Every part is built by the composition root (palui.app) and handed in.
"""

from __future__ import annotations

import asyncio

from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow
from palui.chat.background import Background
from palui.chat.inbox import Inbox
from palui.chat.recovery import Recovery
from palui.chat.sweepers import sweep_approvals, sweep_outbox
from palui.chat.workers import ChatWorkers
from palui.db import Store
from palui.delivery.outbox import Outbox
from palui.domain import EVERY_CHAT, ChatScope, Inbound
from palui.logs import get_logger

log = get_logger("palui.chat")


class Chats:
    def __init__(
        self,
        store: Store,
        inbox: Inbox,
        workers: ChatWorkers,
        outbox: Outbox,
        background: Background,
        recovery: Recovery,
        *,
        approvals: Approvals,
        edits: EditFlow,
        owners: frozenset[int],
        scope: ChatScope = EVERY_CHAT,
    ) -> None:
        self._store = store
        self._scope = scope
        self.inbox = inbox
        self._workers = workers
        self._outbox = outbox
        self._background = background
        self._recovery = recovery
        self._approvals = approvals
        self._edits = edits
        self._owners = owners

    async def start(self) -> None:
        """Pick up where a previous process stopped: re-run its unfinished work."""
        # Only chats no live process holds: another process's turns here go on (chat.recovery).
        abandoned = (await self._recovery.at_start()).turns
        pending = [i for i in await self._store.inbox.pending() if self._scope.serves(i.chat_id)]
        log.info("service_started", abandoned_turns=abandoned, pending_updates=len(pending))
        for item in pending:
            await self.inbox.dispatch_stored(item)
        kick, spawn = self._workers.kick, self._background.spawn
        for chat_id in {o.chat_id for o in await self._store.outbox.pending()}:
            spawn(self._outbox.deliver(chat_id))
        for chat_id in await self._store.approvals.chats_with_paused_turns():
            kick(chat_id)  # turns whose cards were decided while Palui was down
        for chat_id in await self._store.memory.chats_with_open_slices():
            kick(chat_id)  # a compaction or a save cut short: the worker finishes it
        for chat_id in await self._store.webhooks.chats_pending():
            kick(chat_id)  # webhook deliveries stored but not yet summarised
        for chat_id in {run.chat_id for run in await self._store.jobs.queued()}:
            kick(chat_id)  # job runs claimed but not started
        if self._scope.only is None:
            # Both go over every chat's cards: a process serving one chat leaves them to the
            # daemon (the console asks its own cards at once, as y/n questions).
            spawn(self._edits.recover())  # card edits a crash kept from being shown
            spawn(sweep_approvals(self._approvals, kick))
        spawn(sweep_outbox(self._store, self._outbox))
        spawn(self._recovery.sweep(kick))  # chats whose process died elsewhere
        # The heartbeat: also takes over what a process whose heartbeat stopped held.
        spawn(self._recovery.watch(kick, self._deliver_soon))

    async def close(self) -> None:
        """Stop all work; whatever was unfinished stays in the database for the next start."""
        await self._background.close(self._workers.close())
        await self._recovery.close()

    async def accept(self, inbound: Inbound) -> bool:
        return await self.inbox.accept(inbound)

    async def wait_idle(self, chat_id: int) -> None:
        """Wait until the chat has no turn or command running (its replies are then sent).
        A worker idling in its grace (keeping the lease for the next message) counts as idle."""
        idle = self._workers.idle(chat_id)
        while True:
            busy = [t for t in self._background.handlers() if not t.done()]
            if not busy and idle.is_set():
                return
            waiting = asyncio.ensure_future(idle.wait())
            await asyncio.wait([waiting, *busy])

    def _deliver_soon(self, chat_id: int) -> None:
        self._background.spawn(self._outbox.deliver(chat_id))

    async def notify_owners(self, text: str) -> None:
        """Tell every allowed user (in their private chat with the bot)."""
        for user_id in sorted(self._owners):
            await self._store.outbox.add(user_id, text)
            self._background.spawn(self._outbox.deliver(user_id))
