"""Pace outgoing messages to Telegram's limits, so sends are not refused with 429.

Telegram asks bots to stay near one message per second in a chat, at most 20 per minute in a
group and about 30 per second overall. When it answers 429 anyway, `retry_after` says how long
to hold off: `pause_chat` / `pause_all` make every later send wait it out.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["SendLimits", "SendRateLimiter"]


@dataclass(frozen=True)
class SendLimits:
    per_chat_interval: float = 1.0  # seconds between two messages to one chat
    group_per_minute: int = 20  # messages to one group chat in any 60 s
    global_per_second: int = 30  # messages to all chats in any 1 s


@dataclass
class _Chat:
    group_sends: deque[float]  # times of the latest sends, up to group_per_minute of them
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_send: float = -math.inf
    before: float = -math.inf  # last_send before the latest send was counted (`refused`)
    paused_until: float = -math.inf


class SendRateLimiter:
    """Waits before each send as long as the limits require; one per bot, shared by all chats.

    `clock` and `sleep` are injectable so tests run on a fake clock without real waiting.
    """

    _FORGET_AFTER = 60.0  # an idle chat's state older than this no longer limits anything

    def __init__(
        self,
        limits: SendLimits | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.limits = limits or SendLimits()
        self._clock = clock
        self._sleep = sleep
        self._chats: dict[int, _Chat] = {}
        self._recent: deque[float] = deque(maxlen=self.limits.global_per_second)
        self._paused_until = -math.inf
        self._forget_at_size = 1024

    async def acquire(self, chat_id: int) -> float:
        """Wait until a message to `chat_id` may go out, and count it as sent; when it was
        counted (for `refused`)."""
        async with self._chat(chat_id).lock:
            return await self._wait_turn(chat_id)

    @asynccontextmanager
    async def slot(self, chat_id: int) -> AsyncIterator[None]:
        """Like `acquire`, and other senders to this chat wait until the block ends, so the
        parts of one reply go out in order."""
        async with self._chat(chat_id).lock:
            await self._wait_turn(chat_id)
            yield

    def answered(self, chat_id: int) -> None:
        """Telegram answered the message just sent to `chat_id`: the chat's next one waits a
        full interval from now. Telegram counts a message when it arrives, and a busy event
        loop may hold a request some time between `acquire` and its arrival: paced from the
        answer, two messages never arrive closer than the interval, however late the first
        went out."""
        chat = self._chats.get(chat_id)
        if chat is not None:
            chat.last_send = max(chat.last_send, self._clock())

    def refused(self, chat_id: int, counted: float) -> None:
        """Telegram refused the request `acquire` counted at `counted` (a Bad Request: nothing
        reached the chat, e.g. a search's probe of an id that is no message of ours): the
        chat's next message does not wait behind it, unless another was counted since."""
        chat = self._chats.get(chat_id)
        if chat is not None and chat.last_send == counted:
            chat.last_send = chat.before

    def pause_chat(self, chat_id: int, seconds: float) -> None:
        """Hold every later send to this chat for `seconds` (Telegram's retry_after)."""
        chat = self._chat(chat_id)
        chat.paused_until = max(chat.paused_until, self._clock() + seconds)

    def pause_all(self, seconds: float) -> None:
        """Hold every later send to any chat for `seconds`."""
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    async def _wait_turn(self, chat_id: int) -> float:
        chat = self._chat(chat_id)
        while True:
            now = self._clock()
            ready_at = self._ready_at(chat_id, chat)
            if ready_at <= now:
                break
            # Re-check after waking: a pause may have been set or another chat used the budget.
            await self._sleep(ready_at - now)
        chat.before, chat.last_send = chat.last_send, now
        if chat_id < 0:
            chat.group_sends.append(now)
        self._recent.append(now)
        self._forget_idle(now)
        return now

    def _ready_at(self, chat_id: int, chat: _Chat) -> float:
        ready_at = max(
            chat.last_send + self.limits.per_chat_interval,
            chat.paused_until,
            self._paused_until,
        )
        if chat_id < 0 and len(chat.group_sends) == chat.group_sends.maxlen:
            ready_at = max(ready_at, chat.group_sends[0] + 60.0)
        if len(self._recent) == self._recent.maxlen:
            ready_at = max(ready_at, self._recent[0] + 1.0)
        return ready_at

    def _chat(self, chat_id: int) -> _Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = self._chats[chat_id] = _Chat(deque(maxlen=self.limits.group_per_minute))
        return chat

    def _forget_idle(self, now: float) -> None:
        # Bounded memory for a bot that talks to many chats: drop state that limits nothing.
        if len(self._chats) < self._forget_at_size:
            return
        horizon = now - self._FORGET_AFTER
        for chat_id, chat in list(self._chats.items()):
            idle = not chat.lock.locked() and max(chat.last_send, chat.paused_until) < horizon
            if idle:
                del self._chats[chat_id]
        self._forget_at_size = max(1024, 2 * len(self._chats))
