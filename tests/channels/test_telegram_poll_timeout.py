"""Polling through Telegram's failures: a long poll that hangs (Telegram's front end stuck) is
given up soon after its own timeout, and after a failure the poll is short and soon again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog
from telegram import Update
from telegram.error import NetworkError
from telegram.request import HTTPXRequest

from palui.channels.telegram import TelegramChannel
from palui.channels.telegram.inbound import POLL_BACKOFF_CAP_S, SHORT_POLL_READ_S, poll
from palui.channels.telegram.link import Link
from palui.domain import Inbound
from palui.errors import ChannelError
from palui.ports import Part
from tests.fakes.telegram_api import FakeTelegram


class Sink:
    async def accept(self, inbound: Inbound) -> None:
        pass

    async def take(self, update: Update) -> None:
        pass


@pytest.fixture
def read_timeouts(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The read timeout of every getUpdates request PTB sends, in order."""
    seen: list[float] = []
    do_request = HTTPXRequest.do_request

    async def recording(self: HTTPXRequest, *args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("url", "")).endswith("/getUpdates"):
            seen.append(kwargs["read_timeout"])
        return await do_request(self, *args, **kwargs)

    monkeypatch.setattr(HTTPXRequest, "do_request", recording)
    return seen


async def test_a_long_poll_is_given_up_ten_seconds_past_its_timeout(
    read_timeouts: list[float],
) -> None:
    # PTB adds getUpdates' `timeout` to the request's read timeout itself: the client must not
    # add it again, or a hung poll holds every incoming message for twice as long.
    async with FakeTelegram() as fake:
        channel = TelegramChannel(fake.token, fake.url, poll_timeout_s=5)
        await channel.initialize()
        try:
            await channel.start_polling(Sink(), [("help", "Help")])
            await fake.wait_for_request("getUpdates")
        finally:
            await channel.close()

    assert read_timeouts[0] == 5 + 10


def getupdates_timeouts(fake: FakeTelegram) -> list[int]:
    return [int(r.params.get("timeout") or 0) for r in fake.requests if r.method == "getUpdates"]


async def test_after_a_failed_poll_it_polls_short_until_answered_then_long_again(
    read_timeouts: list[float],
) -> None:
    # A long poll sent into an outage hangs until its read timeout (25 + 10 s) while messages
    # wait: after a failure the poll is short (timeout 0, a read timeout of a few seconds).
    async with FakeTelegram() as fake:
        channel = TelegramChannel(fake.token, fake.url, poll_timeout_s=7)
        await channel.initialize()
        outage = fake.fail()  # the first poll is answered 502
        poller = asyncio.create_task(poll(channel.bot, 7, Sink().take))
        try:
            first = await fake.wait_for_request("getUpdates")
            outage.end()
            await fake.wait_for_request(
                "getUpdates", lambda p: p is not first.params and int(p.get("timeout") or 0) == 7
            )
        finally:
            poller.cancel()
            await channel.close()

    timeouts = getupdates_timeouts(fake)
    assert timeouts[0] == 7 and timeouts[-1] == 7 and timeouts[1:-1] and set(timeouts[1:-1]) == {0}
    assert read_timeouts[0] == 7 + 10 and read_timeouts[-1] == 7 + 10
    assert set(read_timeouts[1:-1]) == {SHORT_POLL_READ_S}


class FailingBot:
    """getUpdates failing as in an outage (502) `failures` times, then answered: a short poll
    at once (nothing came), a long one never."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[dict[str, Any]] = []
        self.called = asyncio.Event()

    async def get_updates(self, **kwargs: Any) -> list[Any]:
        self.calls.append(kwargs)
        self.called.set()
        if len(self.calls) <= self.failures:
            raise NetworkError("Bad Gateway")
        if kwargs["timeout"]:
            await asyncio.Event().wait()
        return []


async def test_failed_polls_wait_a_few_seconds_at_most_and_less_once_telegram_answers() -> None:
    bot = FailingBot(failures=8)
    link = Link()
    with structlog.testing.capture_logs() as logs:
        poller = asyncio.create_task(poll(bot, 25, Sink().take, link))  # type: ignore[arg-type]
        try:
            while len(bot.calls) < bot.failures + 2:
                bot.called.clear()
                await bot.called.wait()
                link.answered()  # a send found Telegram answering: the poll goes on now
        finally:
            poller.cancel()

    waits = [line["retry_in_s"] for line in logs if line["event"] == "poll_failed"]
    assert len(waits) == 8
    assert max(waits) <= POLL_BACKOFF_CAP_S and waits == sorted(waits)
    assert [c["timeout"] for c in bot.calls] == [25] + [0] * 8 + [25]


async def test_a_long_poll_in_flight_is_given_up_when_a_send_finds_telegram_down() -> None:
    async with FakeTelegram() as fake:
        channel = TelegramChannel(fake.token, fake.url, poll_timeout_s=600)
        await channel.initialize()
        try:
            await channel.start_polling(Sink(), [("help", "Help")])
            await fake.wait_for_request("getUpdates")  # long: answered only when it times out
            outage = fake.fail()
            with pytest.raises(ChannelError):
                await channel.send_part(1001, Part("hi", "hi"))  # 502
            await fake.wait_for_request("getUpdates", lambda p: int(p.get("timeout") or 0) == 0)
            outage.end()
            await fake.wait_for_request(
                "getUpdates",
                lambda p: (
                    int(p.get("timeout") or 0) == 600
                    and len([t for t in getupdates_timeouts(fake) if t == 600]) > 1
                ),
            )
        finally:
            await channel.close()
