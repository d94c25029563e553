"""What the rest of Palui calls when it stored something for a chat: the job scheduler, the
webhook endpoint, the built-in tools. Each wakes the chat's worker or its outbox sender, so the
work runs in the chat's turn order (after the running turn, never beside it)."""

from __future__ import annotations

from palui.chat.workers import ChatWorkers
from palui.delivery.outbox import Outbox


class Wakeups:
    def __init__(self, workers: ChatWorkers, outbox: Outbox) -> None:
        self._workers = workers
        self._outbox = outbox

    def job_due(self, chat_id: int) -> None:
        """A job run of the chat was claimed (or a note about one stored): run it, send the
        note."""
        self._workers.kick(chat_id)
        self._outbox.deliver_soon(chat_id)

    def deliver_soon(self, chat_id: int) -> None:
        """Something new is in the chat's outbox (e.g. from palui__send_message)."""
        self._outbox.deliver_soon(chat_id)

    def webhook_stored(self, chat_id: int) -> None:
        """A webhook delivery for the chat is in the database: summarise it."""
        self._workers.kick(chat_id)

    def approval_decided(self, chat_id: int) -> None:
        """A card of the chat was decided outside a tap (the web console): resume its turn."""
        self._workers.kick(chat_id)
        self._outbox.deliver_soon(chat_id)
