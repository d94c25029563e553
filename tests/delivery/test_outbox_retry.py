"""Issue 29's Telegram outage: a reply the channel failed to take is tried again after a short,
capped back-off (exactly `retry_after` when the channel asked for one), and at once when the
channel answers again; in order, and once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from palui.chat.background import Background
from palui.chat.leases import ChatLeases
from palui.delivery import retry
from palui.delivery.outbox import Outbox
from palui.errors import ChannelError

CHAT = 4545


class Outage:
    """A channel that fails every send while `down`, as Telegram in an outage."""

    def __init__(self) -> None:
        self.down = True
        self.retry_after_s: float | None = None  # a 429's, else a 502
        self.messages: list[str] = []
        self.attempts = 0
        self.changed = asyncio.Event()

    def render(self, text: str) -> list[str]:
        return [text]

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> int:
        self.attempts += 1
        self.changed.set()
        if self.down:
            raise ChannelError("Telegram can't be reached", retry_after_s=self.retry_after_s)
        self.messages.append(part)
        return 500 + len(self.messages)

    async def find_part(self, chat_id: int, floor: int, part: Any, skip: Any) -> int | None:
        return None  # the outage carried none out

    async def until(self, ready: Any) -> None:
        while not ready():
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)  # a guard, not a timing


@pytest.fixture
async def background() -> AsyncIterator[Background]:
    background = Background()
    yield background
    await background.close()


def outbox_for(store: Any, chat: Outage, background: Background) -> Outbox:
    senders = ChatLeases(store.delivery_leases, ttl_s=60, what="delivery")
    return Outbox(store, chat, senders, background)  # type: ignore[arg-type]


async def test_a_failed_send_is_retried_after_a_back_off_capped_at_a_few_seconds(
    store: Any, background: Background
) -> None:
    chat = Outage()
    outbox = outbox_for(store, chat, background)
    await store.outbox.add(CHAT, "the answer")

    await outbox.deliver(CHAT)
    delays = [outbox.retry_in(CHAT)]
    for _ in range(6):
        tried = chat.attempts
        outbox.retry_stuck()  # the retry goes now instead of when it is due
        await chat.until(lambda t=tried: chat.attempts > t)
        async with outbox.lock(CHAT):  # that delivery has ended (it holds the lock till then)
            delays.append(outbox.retry_in(CHAT))

    assert delays[0] == retry.RETRY_FIRST_S
    assert all(d is not None and d <= retry.RETRY_CAP_S for d in delays)
    assert delays == sorted(delays, key=float) and delays[-1] == retry.RETRY_CAP_S  # type: ignore[arg-type]
    assert chat.messages == []


async def test_a_send_the_channel_asked_to_wait_for_is_retried_after_exactly_that(
    store: Any, background: Background
) -> None:
    chat = Outage()
    chat.retry_after_s = 7.0
    outbox = outbox_for(store, chat, background)
    await store.outbox.add(CHAT, "the answer")

    await outbox.deliver(CHAT)

    assert outbox.retry_in(CHAT) == 7.0


async def test_replies_held_by_an_outage_go_out_in_order_once_the_channel_answers_again(
    store: Any, background: Background, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the channel's word that it answers again can send them now: the back-off is long.
    monkeypatch.setattr(retry, "RETRY_FIRST_S", 3600.0)
    chat = Outage()
    outbox = outbox_for(store, chat, background)
    await store.outbox.add(CHAT, "first")
    await store.outbox.add(CHAT, "second")
    await outbox.deliver(CHAT)
    assert outbox.retry_in(CHAT) == 3600.0 and not outbox.delivered(CHAT)

    chat.down = False
    outbox.retry_stuck()
    await chat.until(lambda: len(chat.messages) == 2)

    assert chat.messages == ["first", "second"]
    async with outbox.lock(CHAT):
        assert outbox.delivered(CHAT) and outbox.retry_in(CHAT) is None


class CarriedOut(Outage):
    """The outage's 502 was carried out after all: the part is in the chat as message 201,
    which can be found once Telegram answers searches again (`searchable`)."""

    def __init__(self) -> None:
        super().__init__()
        self.searchable = False
        self.lookups = 0

    async def find_part(self, chat_id: int, floor: int, part: Any, skip: Any) -> int | None:
        self.lookups += 1
        self.changed.set()
        if not self.searchable:
            raise ChannelError("Telegram could not be asked whether the message is there")
        return 201


async def test_a_part_whose_send_failed_is_not_sent_while_telegram_cannot_be_searched(
    store: Any, background: Background, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retry, "RETRY_FIRST_S", 3600.0)  # only the kicks below retry
    chat = CarriedOut()
    outbox = outbox_for(store, chat, background)
    earlier = await store.outbox.add(CHAT, "earlier")
    await store.outbox.part_sent(earlier, 1, done=True, message_id=200)  # the search's floor
    await store.outbox.add(CHAT, "the answer")
    await outbox.deliver(CHAT)  # 502: it may be in the chat

    chat.down = False  # sends would go through, but searches fail still
    outbox.retry_stuck()
    await chat.until(lambda: chat.lookups == 1)
    async with outbox.lock(CHAT):
        assert not outbox.delivered(CHAT)
    chat.searchable = True
    outbox.retry_stuck()
    await chat.until(lambda: chat.lookups == 2)
    async with outbox.lock(CHAT):
        assert outbox.delivered(CHAT)

    assert chat.messages == []  # found where the 502 put it, never sent again
