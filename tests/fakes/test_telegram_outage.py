"""The fake Bot API's outage switch fails real PTB calls as Telegram does, then recovers."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import pytest
from telegram import Bot
from telegram.error import NetworkError, RetryAfter, TimedOut
from telegram.request import HTTPXRequest

from tests.fakes.telegram_api import FakeTelegram
from tests.fakes.telegram_outage import Failure

CHAT = 1001


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def bot(fake: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # PTB 22 warns when retry_after is read as int
    # A short read timeout: the hang is the fake's, the giving up the client's.
    request = HTTPXRequest(read_timeout=0.5)
    async with Bot(fake.token, base_url=fake.base_url, request=request) as bot:
        yield bot


async def test_sends_fail_in_turn_during_an_outage_and_succeed_after(
    fake: FakeTelegram, bot: Bot
) -> None:
    outage = fake.fail(retry_after=3)

    with pytest.raises(NetworkError, match="Bad Gateway") as bad_gateway:
        await bot.send_message(CHAT, "one")
    with pytest.raises(TimedOut):
        await bot.send_message(CHAT, "two")
    with pytest.raises(RetryAfter) as flood:
        await bot.send_message(CHAT, "three")
    outage.end()
    await bot.send_message(CHAT, "four")

    assert not isinstance(bad_gateway.value, TimedOut)
    assert flood.value.retry_after == dt.timedelta(seconds=3)
    assert [m["text"] for m in fake.sent_messages(CHAT)] == ["four"]  # none was carried out
    assert outage.failures == {
        ("sendmessage", Failure.BAD_GATEWAY): 1,
        ("sendmessage", Failure.HANG): 1,
        ("sendmessage", Failure.FLOOD): 1,
    }


async def test_get_updates_fails_during_an_outage_and_delivers_after(
    fake: FakeTelegram, bot: Bot
) -> None:
    update_id = fake.push_text(CHAT, CHAT, "hello")
    outage = fake.fail()

    for expected in (NetworkError, TimedOut, RetryAfter):
        with pytest.raises(expected):
            await bot.get_updates(timeout=0)
    assert fake.delivered_count(update_id) == 0
    outage.end()
    updates = await bot.get_updates(timeout=0)

    assert [u.update_id for u in updates] == [update_id]
