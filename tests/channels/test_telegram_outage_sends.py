"""Sending through a Telegram outage: a request the outage swallowed is given up soon after
Telegram answers again, not at its read timeout, and whoever waits for Telegram is told."""

from __future__ import annotations

import asyncio

import pytest

from palui.channels.telegram import TelegramChannel
from palui.errors import ChannelError
from palui.ports import Part
from tests.fakes.telegram_api import FakeTelegram

CHAT, OTHER_CHAT = 1001, 1002


async def test_a_send_hung_in_an_outage_is_given_up_once_telegram_answers_again() -> None:
    async with FakeTelegram() as fake:
        # Left alone, the hung request would hold its chat's replies for ten minutes.
        channel = TelegramChannel(fake.token, fake.url, read_timeout_s=600)
        backs: list[str] = []
        channel.on_back(lambda: backs.append("back"))
        await channel.initialize()
        try:
            outage = fake.fail()
            with pytest.raises(ChannelError):
                await channel.send_part(CHAT, Part("one", "one"))  # 502
            hung = asyncio.create_task(channel.send_part(CHAT, Part("two", "two")))
            await fake.wait_for_request("sendMessage", lambda p: p.get("text") == "two")
            outage.end()
            assert backs == []
            await channel.send_part(OTHER_CHAT, Part("three", "three"))  # Telegram answers
            assert backs == ["back"]
            with pytest.raises(ChannelError, match="timed out"):
                await asyncio.wait_for(hung, 60)  # a guard, not a timing: 600 s without
        finally:
            await channel.close()

    assert [m["text"] for m in fake.sent_messages()] == ["three"]
