"""When the outbox tries a chat's replies again after the channel failed to take one.

A delivery that stopped on a transient failure (an outage's 5xx, a timeout) is tried again after
1, 2, 4, 4... s: capped low, because a retry is one request and a long back-off would keep the
chat waiting long after the outage ended. When the channel asked for a pause (Telegram's 429),
exactly its `retry_after`. And at once when the channel says it answers again (`kick`, wired to
Telegram's link by the composition root). The outbox sweeper (`palui.chat.sweepers`) still
covers what no retry here does (another process's replies, a failure that was no send's).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from palui.ports.leases import Spawner

RETRY_FIRST_S = 1.0
RETRY_CAP_S = 4.0


@dataclass
class _Retry:
    delay_s: float
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class Retries:
    def __init__(self, background: Spawner, deliver: Callable[[int], Awaitable[None]]) -> None:
        self._background = background
        self._deliver = deliver
        self._due: dict[int, _Retry] = {}  # per chat waiting for a retry: that retry
        self._next_s: dict[int, float] = {}  # per chat failing: the delay after its next failure

    def failed(self, chat_id: int, retry_after_s: float | None) -> None:
        """A delivery to the chat stopped on a transient failure: try again later."""
        if retry_after_s is not None:
            delay = retry_after_s
        else:
            delay = self._next_s.get(chat_id, RETRY_FIRST_S)
            self._next_s[chat_id] = min(delay * 2, RETRY_CAP_S)
        if chat_id in self._due or self._background.closed:
            return  # one retry per chat at a time: it sends everything waiting
        retry = self._due[chat_id] = _Retry(delay)
        self._background.spawn(self._retry(chat_id, retry))

    def delivered(self, chat_id: int) -> None:
        """Everything waiting went out: the next failure starts the back-off anew."""
        self._next_s.pop(chat_id, None)

    def due_in(self, chat_id: int) -> float | None:
        """The delay the chat's waiting retry was scheduled with; None when none waits."""
        retry = self._due.get(chat_id)
        return retry.delay_s if retry is not None else None

    def kick(self) -> None:
        """The channel answers again: every waiting retry goes now."""
        for retry in self._due.values():
            retry.wake.set()

    async def _retry(self, chat_id: int, retry: _Retry) -> None:
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(retry.delay_s):
                    await retry.wake.wait()
        finally:
            self._due.pop(chat_id, None)
        await self._deliver(chat_id)
