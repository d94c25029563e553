"""Refusals to strangers: one polite refusal a day each, sent in the background under a global
budget, so a burst of strangers never delays the intake (and so the owner's answers).

The intake only queues a stranger's event (no I/O). One background task works the queue: it
counts the attempt in the database (the audit line), and a stranger's first attempt of the day
gets the refusal while the budget (refusals per minute, across all strangers) has room. Past
the budget, or when the queue is full, a refusal is skipped: it is a courtesy, and the flood is
what must not get through.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime

from palui.chat.background import Background
from palui.db import Store
from palui.domain import Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Notifying

log = get_logger("palui.chat.strangers")

REFUSALS_PER_MINUTE = 20  # well inside Telegram's 30 messages/s overall, so owners keep theirs
QUEUE_LIMIT = 200  # strangers' events waiting to be looked at; past it they are only logged
WINDOW_S = 60.0

TAP_REFUSAL = "Only the bot's owner can decide."


def refusal_text(user_id: int) -> str:
    return (
        "This is a private assistant. Ask its owner to add your user id "
        f"({user_id}) to PALUI_ALLOWED_USERS."
    )


class StrangerRefusals:
    def __init__(
        self,
        store: Store,
        channel: Notifying,
        background: Background,
        *,
        now: Callable[[], datetime],
        per_minute: int = REFUSALS_PER_MINUTE,
        queue_limit: int = QUEUE_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._channel = channel
        self._background = background
        self._now = now
        self._per_minute = per_minute
        self._queue: deque[Inbound] = deque()
        self._queue_limit = queue_limit
        self._clock = clock
        self._sent: deque[float] = deque()  # when the refusals of the last minute went out
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()

    def offer(self, inbound: Inbound) -> None:
        """Queue a stranger's event for its refusal; never waits."""
        if len(self._queue) >= self._queue_limit:
            log.warning("stranger_refusal_dropped", user_id=inbound.user.id, reason="queue full")
            return
        self._queue.append(inbound)
        if not self._draining:
            self._draining = True
            self._idle.clear()
            self._background.spawn(self._drain())

    async def idle(self) -> None:
        """Wait until every queued event has been looked at (for tests and shutdown logs)."""
        await self._idle.wait()

    async def _drain(self) -> None:
        try:
            while self._queue:
                await self._one(self._queue.popleft())
        finally:
            # No await between the last look at the queue and this: nothing queued is missed.
            self._draining = False
            self._idle.set()

    async def _one(self, inbound: Inbound) -> None:
        try:
            if not await self._store.strangers.first_today(inbound.user.id, self._now()):
                return
        except Exception:
            # The database is unreachable: skip this courtesy rather than stop the queue.
            log.exception("stranger_not_counted", user_id=inbound.user.id)
            return
        if not self._take():
            log.warning("stranger_refusal_skipped", user_id=inbound.user.id, reason="budget")
            return
        try:
            if inbound.callback_query_id:
                await self._channel.answer_callback(inbound.callback_query_id, TAP_REFUSAL)
            else:
                await self._channel.send_notice(inbound.chat_id, refusal_text(inbound.user.id))
        except ChannelError as exc:
            log.warning("stranger_notice_failed", error=str(exc))

    def _take(self) -> bool:
        """One refusal from the budget, if the last minute left room."""
        now = self._clock()
        while self._sent and now - self._sent[0] >= WINDOW_S:
            self._sent.popleft()
        if len(self._sent) >= self._per_minute:
            return False
        self._sent.append(now)
        return True
