"""A long poll that hangs (Telegram's front end stuck) is given up soon after its own timeout."""

from __future__ import annotations

from typing import Any

import pytest
from telegram.request import HTTPXRequest

from palui.channels.telegram import TelegramChannel
from palui.domain import Inbound
from tests.fakes.telegram_api import FakeTelegram


class Sink:
    async def accept(self, inbound: Inbound) -> None:
        pass


async def test_a_long_poll_is_given_up_ten_seconds_past_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # PTB adds getUpdates' `timeout` to the request's read timeout itself: the client must not
    # add it again, or a hung poll holds every incoming message for twice as long.
    read_timeouts: list[float] = []
    do_request = HTTPXRequest.do_request

    async def recording(self: HTTPXRequest, *args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("url", "")).endswith("/getUpdates"):
            read_timeouts.append(kwargs["read_timeout"])
        return await do_request(self, *args, **kwargs)

    monkeypatch.setattr(HTTPXRequest, "do_request", recording)
    async with FakeTelegram() as fake:
        channel = TelegramChannel(fake.token, fake.url, poll_timeout_s=5)
        await channel.initialize()
        try:
            await channel.start_polling(Sink(), [("help", "Help")])
            await fake.wait_for_request("getUpdates")
        finally:
            await channel.close()

    assert read_timeouts[0] == 5 + 10
